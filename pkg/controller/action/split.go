package action

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
)

// Splitting a workload's replicas among clusters.
//
// An intent with spec.split runs on each decided cluster only that cluster's share of its
// replicas. The placement controller writes the shares in status.split before it writes the
// decisions; a decided cluster whose share this controller does not see yet (the informer
// brought the decisions first, or the shares are older than them) gets no ManifestWork in that
// sync, never the whole total, and the status update that brings its share requeues the intent.
// A cluster that already has its ManifestWork keeps it as it is meanwhile.
//
// The share is set on the one workload object that the consumers target (validation allows a
// split only when they all target one object of a kind with replicas), as the replicas it runs
// there:
//
//   - Deployment, StatefulSet, ReplicaSet: spec.replicas is the share.
//   - Job: the share counts the Job's pods that run at once, as hpa counts a Job's replicas
//     (parallelism, at most completions), so spec.parallelism is the share. A Job that asks for
//     a number of completions has them divided among the clusters in proportion to their shares
//     (largest remainders, ties to the cluster first by name), so that together the clusters
//     complete as many pods as the Job asks; an Indexed Job's clusters each run the indexes
//     from 0 to their part. A Job without completions (a work queue: it ends when a pod
//     succeeds) gets none on any cluster. Kubernetes refuses to change a Job's completions once
//     the Job exists, so a Job already delivered keeps the completions it was delivered with
//     (keepJobCompletions), and a later share changes its parallelism only.
//
// A share that changes is written to the cluster's existing ManifestWork, whose work agent then
// scales the workload there: the ManifestWork is updated, never replaced.

// errNoShare is desiredWork's answer for a cluster of a split intent that has no share yet.
var errNoShare = errors.New("the cluster has no share of the split replicas yet")

// waitsForShare reports whether the intent splits its replicas and status.split gives the
// cluster no share yet: the cluster gets no ManifestWork until it has one.
func waitsForShare(in *fleetfitv1alpha1.HPAIntent, cluster string) bool {
	if in.Spec.Split == nil {
		return false
	}
	_, ok := in.Status.Split.ShareOf(cluster)
	return !ok
}

// splitTarget returns the index among r.Manifests of the object whose replicas are split: the
// target of the consumers, which validation holds to one object.
func splitTarget(r *hpa.Resolved) (int, bool) {
	for i := range r.Consumers {
		if m := r.Consumers[i].Manifest; m >= 0 && m < len(r.Manifests) {
			return m, true
		}
	}
	return -1, false
}

// setShare sets the cluster's share of a split intent's replicas on o, the split workload
// object (see the comment at the top of this file for what a share is for each kind).
func setShare(in *fleetfitv1alpha1.HPAIntent, o *unstructured.Unstructured, cluster string) error {
	share, ok := in.Status.Split.ShareOf(cluster)
	if !ok {
		return errNoShare
	}
	switch o.GetKind() {
	case "Deployment", "StatefulSet", "ReplicaSet":
		return unstructured.SetNestedField(o.Object, int64(share), "spec", "replicas")
	case "Job":
		if err := unstructured.SetNestedField(o.Object, int64(share), "spec", "parallelism"); err != nil {
			return err
		}
		completions, ok, err := jobCompletions(o)
		if err != nil || !ok {
			return err
		}
		part := divideCompletions(completions, in.Status.Split.Shares)[cluster]
		return unstructured.SetNestedField(o.Object, part, "spec", "completions")
	}
	return fmt.Errorf("%s %s has no replicas to split; split only a Deployment, StatefulSet, ReplicaSet or Job", o.GetKind(), o.GetName())
}

// jobCompletions returns the completions a Job asks for, as Kubernetes defaults them: 1 when
// the Job sets neither completions nor parallelism, none (false) when it sets parallelism only.
func jobCompletions(o *unstructured.Unstructured) (int64, bool, error) {
	v, found, err := unstructured.NestedFieldNoCopy(o.Object, "spec", "completions")
	if err != nil {
		return 0, false, err
	}
	if !found || v == nil {
		if _, hasParallelism, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "parallelism"); hasParallelism {
			return 0, false, nil
		}
		return 1, true, nil
	}
	switch v := v.(type) {
	case int64:
		return v, true, nil
	case float64:
		return int64(v), true, nil
	}
	return 0, false, fmt.Errorf("Job %s has spec.completions %v, which is not a number", o.GetName(), v)
}

// divideCompletions divides a Job's completions among the clusters in proportion to their
// shares, by largest remainder: every cluster gets the whole part of its quota, and the
// completions left over go one each to the largest remainders, ties to the cluster first by
// name. The parts add up to completions, and a cluster's part never depends on map order.
func divideCompletions(completions int64, shares []fleetfitv1alpha1.ClusterShare) map[string]int64 {
	var sum int64
	for _, s := range shares {
		sum += int64(max(s.Replicas, 0))
	}
	out := make(map[string]int64, len(shares))
	if sum == 0 {
		return out
	}
	type quota struct {
		cluster   string
		remainder int64
	}
	quotas := make([]quota, 0, len(shares))
	left := completions
	for _, s := range shares {
		n := int64(max(s.Replicas, 0)) * completions
		out[s.ClusterName] = n / sum
		left -= n / sum
		quotas = append(quotas, quota{s.ClusterName, n % sum})
	}
	slices.SortFunc(quotas, func(a, b quota) int {
		return cmp.Or(cmp.Compare(b.remainder, a.remainder), cmp.Compare(a.cluster, b.cluster))
	})
	for i := 0; left > 0 && i < len(quotas); i++ {
		out[quotas[i].cluster]++
		left--
	}
	return out
}

// keepJobCompletions leaves, on every Job of want, the completions that the stored ManifestWork
// delivered it with: Kubernetes refuses to change a Job's completions once it exists, so a new
// share of a split Job changes only its parallelism there. want is changed in place; stored may
// be nil (a first delivery).
func keepJobCompletions(stored, want *workv1.ManifestWork) {
	if stored == nil {
		return
	}
	delivered := map[[2]string]any{}
	for _, m := range stored.Spec.Workload.Manifests {
		o, ok := manifestObject(m.RawExtension)
		if !ok || !isBatchJob(o) {
			continue
		}
		if v, found, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "completions"); found {
			delivered[[2]string{o.GetNamespace(), o.GetName()}] = v
		}
	}
	if len(delivered) == 0 {
		return
	}
	for i, m := range want.Spec.Workload.Manifests {
		o, ok := manifestObject(m.RawExtension)
		if !ok || !isBatchJob(o) {
			continue
		}
		v, kept := delivered[[2]string{o.GetNamespace(), o.GetName()}]
		if !kept {
			continue
		}
		o = o.DeepCopy()
		if err := unstructured.SetNestedField(o.Object, v, "spec", "completions"); err != nil {
			continue
		}
		want.Spec.Workload.Manifests[i].RawExtension = runtime.RawExtension{Object: o}
	}
}
