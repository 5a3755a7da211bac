package action

import (
	"math"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
)

// workloadReplicas returns, for status.clusters, the replicas that w delivers of the intent's
// workload — the object its consumers target, when they all target one object of a kind with
// replicas — and how many of them the work agent reports ready. replicas is nil when w
// delivers no such object; ready is nil until the agent reports the object's status.
//
// replicas are the pods the object runs at once, as hpa counts them: spec.replicas of a
// Deployment, StatefulSet or ReplicaSet (1 when unset), and a Job's parallelism, at most its
// completions. For a split intent that is the cluster's share (split.go). ready is
// ReadyReplicas of the status feedback, and a Job's ready pods (feedbackJobReady); Kubernetes
// leaves a zero out of a workload's status, so a reported object without the value has none.
func workloadReplicas(in *fleetfitv1alpha1.HPAIntent, w *workv1.ManifestWork) (replicas, ready *int32) {
	target, ok := oneTarget(in)
	if !ok {
		return nil, nil
	}
	for _, m := range w.Spec.Workload.Manifests {
		o, ok := manifestObject(m.RawExtension)
		if !ok || o.GetKind() != target.Kind || o.GetName() != target.Name || o.GetAPIVersion() != target.APIVersion {
			continue
		}
		n, ok := podsAtOnce(o)
		if !ok {
			return nil, nil
		}
		values := feedbackByManifest(w)[manifestKey(o.GetKind(), o.GetNamespace(), o.GetName())]
		if len(values) == 0 {
			return &n, nil
		}
		name := "ReadyReplicas"
		if o.GetKind() == "Job" {
			name = feedbackJobReady
		}
		var r int32
		if v, ok := values[name]; ok && v.Integer != nil {
			// A count the agent reports beyond int32 is refused by the API, never wrapped.
			r = int32(min(max(*v.Integer, 0), math.MaxInt32))
		}
		return &n, &r
	}
	return nil, nil
}

// oneTarget returns the workload object that every consumer of the intent targets, and false
// when they target several (or there is no consumer).
func oneTarget(in *fleetfitv1alpha1.HPAIntent) (fleetfitv1alpha1.ConsumerTarget, bool) {
	cs := in.Spec.Consumers
	if len(cs) == 0 {
		return fleetfitv1alpha1.ConsumerTarget{}, false
	}
	t := cs[0].Target
	for _, c := range cs[1:] {
		if c.Target.APIVersion != t.APIVersion || c.Target.Kind != t.Kind || c.Target.Name != t.Name {
			return fleetfitv1alpha1.ConsumerTarget{}, false
		}
	}
	return t, true
}

// podsAtOnce is how many pods a workload object with replicas runs at once, as the scheduler
// counts them (hpa.ReplicasOf), and false for a kind without replicas or a count that is not
// a whole number in range.
func podsAtOnce(o *unstructured.Unstructured) (int32, bool) {
	switch o.GetKind() {
	case "Deployment", "StatefulSet", "ReplicaSet", "Job":
		n, msg := hpa.ReplicasOf(o)
		return n, msg == ""
	}
	return 0, false
}
