package hpa

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// podSpecPaths says where each kind a consumer can target keeps its pod spec.
// Objects are read as unstructured, so any apiVersion of these kinds works.
var podSpecPaths = map[string][]string{
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
	"Pod":         {"spec"},
}

// decodeManifests decodes the workload's manifests; a manifest that is not a
// named Kubernetes object is a problem, reported by index.
func decodeManifests(ms []v1alpha1.Manifest) ([]*unstructured.Unstructured, problems) {
	var ps problems
	out := make([]*unstructured.Unstructured, 0, len(ms))
	for i := range ms {
		u := &unstructured.Unstructured{}
		var err error
		switch {
		case len(ms[i].Raw) > 0:
			err = u.UnmarshalJSON(ms[i].Raw)
		case ms[i].Object != nil:
			u.Object, err = runtime.DefaultUnstructuredConverter.ToUnstructured(ms[i].Object)
		default:
			err = fmt.Errorf("it is empty")
		}
		if err == nil && (u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "") {
			err = fmt.Errorf("apiVersion, kind or metadata.name is missing")
		}
		if err != nil {
			ps.add(ReasonInvalidWorkload, "", "spec.workload.manifests[%d] is not a Kubernetes object: %v; each manifest needs apiVersion, kind and metadata.name", i, err)
			continue
		}
		out = append(out, u)
	}
	return out, ps
}

// containerKey names one container of one manifest.
type containerKey struct {
	manifest  int
	container string
}

// bindWorkload finds every consumer's target among the manifests, takes its
// replicas from there when the spec leaves them unset, and checks the target
// container and, for exclusiveCPU, the QoS of the whole pod.
func bindWorkload(r *Resolved) problems {
	var ps problems
	specs := map[int]*corev1.PodSpec{}
	for i := range r.Consumers {
		c := &r.Consumers[i]
		idx, msg := findTarget(r.Manifests, &c.Target)
		if msg != "" {
			ps.add(ReasonInvalidWorkload, c.Name, "%s", msg)
			continue
		}
		c.Manifest = idx
		u := r.Manifests[idx]
		spec, msg := podSpecOf(u)
		if msg != "" {
			ps.add(ReasonInvalidWorkload, c.Name, "%s", msg)
			continue
		}
		specs[idx] = spec
		if len(spec.Containers) == 0 {
			ps.add(ReasonInvalidWorkload, c.Name, "target %s %s has no containers; add the container the requirements are for", u.GetKind(), u.GetName())
			continue
		}
		if c.Target.Container != "" && !slices.ContainsFunc(spec.Containers, func(ct corev1.Container) bool { return ct.Name == c.Target.Container }) {
			ps.add(ReasonInvalidWorkload, c.Name, "target %s %s has no container %q (containers: %s); set target.container to one of them",
				u.GetKind(), u.GetName(), c.Target.Container, containerNames(spec.Containers))
			continue
		}
		if c.Replicas == replicasUnset {
			replicas, msg := ReplicasOf(u)
			if msg != "" {
				ps.add(ReasonInvalidWorkload, c.Name, "%s", msg)
				continue
			}
			c.Replicas = replicas
		}
		if c.MachineGuest() {
			if msg := guestLabelConflict(u, c); msg != "" {
				ps.add(ReasonInvalidWorkload, c.Name, "%s", msg)
			}
		}
	}
	if len(ps) > 0 {
		return ps
	}
	for i := range r.Consumers {
		if c := &r.Consumers[i]; c.ExclusiveCPU {
			ps = append(ps, checkGuaranteedPod(r, c, specs[c.Manifest])...)
		}
	}
	return ps
}

// guestLabelConflict says which label of the target's pod template keeps the
// consumer's pods from being guests of its machine type, or "": the hub
// delivers them with Consumer.GuestLabels (see pkg/mutation), and never
// overwrites a label the author wrote.
func guestLabelConflict(u *unstructured.Unstructured, c *Consumer) string {
	path := podSpecPaths[u.GetKind()]
	at := append(slices.Clone(path[:len(path)-1]), "metadata", "labels")
	have, _, err := unstructured.NestedMap(u.Object, at...)
	if err != nil {
		return ""
	}
	want := c.GuestLabels()
	for _, key := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[key]; ok && v != want[key] {
			return fmt.Sprintf("target %s %s has the pod label %s=%v at %s, but the consumer's pods are guests of %s/%s (%s=%s); remove the label from the manifest",
				u.GetKind(), u.GetName(), key, v, strings.Join(at, "."), c.MachineType.Group, c.MachineType.Name, key, want[key])
		}
	}
	return ""
}

// findTarget returns the index of the one manifest the target names, or a
// message saying why there is none.
func findTarget(ms []*unstructured.Unstructured, t *v1alpha1.ConsumerTarget) (int, string) {
	var matches, otherVersions []int
	var sameKind []string
	for i, u := range ms {
		if u.GetKind() != t.Kind {
			continue
		}
		sameKind = append(sameKind, u.GetName())
		if u.GetName() != t.Name {
			continue
		}
		if u.GetAPIVersion() == t.APIVersion {
			matches = append(matches, i)
		} else {
			otherVersions = append(otherVersions, i)
		}
	}
	switch {
	case len(matches) == 1:
		return matches[0], ""
	case len(matches) > 1:
		var where []string
		for _, i := range matches {
			where = append(where, fmt.Sprintf("manifests[%d] (namespace %q)", i, ms[i].GetNamespace()))
		}
		return -1, fmt.Sprintf("target %s %s matches %s; a consumer binds to one object, so give the others different names",
			t.Kind, t.Name, strings.Join(where, " and "))
	case len(otherVersions) > 0:
		u := ms[otherVersions[0]]
		return -1, fmt.Sprintf("target %s %s has apiVersion %s, but spec.workload.manifests[%d] is %s %s with apiVersion %s; set target.apiVersion to %s",
			t.Kind, t.Name, t.APIVersion, otherVersions[0], u.GetKind(), u.GetName(), u.GetAPIVersion(), u.GetAPIVersion())
	}
	there := "none"
	if len(sameKind) > 0 {
		slices.Sort(sameKind)
		there = strings.Join(slices.Compact(sameKind), ", ")
	}
	return -1, fmt.Sprintf("target %s %s (%s) is not among spec.workload.manifests (%s objects there: %s); add it to the workload or fix target.kind and target.name",
		t.Kind, t.Name, t.APIVersion, t.Kind, there)
}

// podSpecOf returns the pod spec of a workload object, or a message saying
// why it has none.
func podSpecOf(u *unstructured.Unstructured) (*corev1.PodSpec, string) {
	path, ok := podSpecPaths[u.GetKind()]
	if !ok {
		return nil, fmt.Sprintf("target kind %s is not supported; target one of Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob or Pod", u.GetKind())
	}
	raw, found, err := unstructured.NestedMap(u.Object, path...)
	if err != nil || !found {
		return nil, fmt.Sprintf("target %s %s has no pod spec at %s; add one", u.GetKind(), u.GetName(), strings.Join(path, "."))
	}
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, spec); err != nil {
		return nil, fmt.Sprintf("target %s %s has an invalid pod spec at %s: %v", u.GetKind(), u.GetName(), strings.Join(path, "."), err)
	}
	return spec, ""
}

// ReplicasOf is how many pods of the object one cluster runs at once:
//   - Deployment, StatefulSet, ReplicaSet: spec.replicas (Kubernetes defaults
//     it to 1). A workload scaled to 0 needs no room; set the consumer's
//     replicas to plan for a later scale-up.
//   - Job: spec.parallelism (default 1), at most spec.completions; CronJob
//     the same for its job template. Overlapping runs of a CronJob are not
//     counted: plan for them with the consumer's replicas.
//   - Pod: 1.
//   - DaemonSet: 1. It runs one pod per node, which is not a count a cluster
//     must fit: the action controller restricts it to nodes with the
//     features, and a cluster qualifies when one node has room for a pod.
func ReplicasOf(u *unstructured.Unstructured) (int32, string) {
	field := func(dflt int64, path ...string) (int64, string) {
		v, found, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
		if !found || v == nil {
			return dflt, ""
		}
		outOfRange := func() (int64, string) {
			return 0, fmt.Sprintf("%s %s has %s %v, out of range: Kubernetes takes 0 to %d; fix the manifest",
				u.GetKind(), u.GetName(), strings.Join(path, "."), v, math.MaxInt32)
		}
		// Counts are int32 in Kubernetes: a larger one is refused, never
		// wrapped (4294967297 would be 1).
		switch v := v.(type) {
		case int64:
			if v < 0 || v > math.MaxInt32 {
				return outOfRange()
			}
			return v, ""
		case float64:
			// The range is checked first: converting a float beyond int64,
			// such as 1e30, to an integer gives an arbitrary value.
			if !(v >= 0 && v <= math.MaxInt32) {
				return outOfRange()
			}
			if v != math.Trunc(v) {
				return 0, fmt.Sprintf("%s %s has %s %v, which is not a whole number; fix the manifest", u.GetKind(), u.GetName(), strings.Join(path, "."), v)
			}
			return int64(v), ""
		default:
			return 0, fmt.Sprintf("%s %s has %s %v, which is not a number; fix the manifest", u.GetKind(), u.GetName(), strings.Join(path, "."), v)
		}
	}
	job := func(prefix ...string) (int32, string) {
		parallelism, msg := field(1, append(prefix, "parallelism")...)
		if msg != "" {
			return 0, msg
		}
		completions, msg := field(parallelism, append(prefix, "completions")...)
		if msg != "" {
			return 0, msg
		}
		return int32(min(parallelism, completions)), ""
	}
	switch u.GetKind() {
	case "Deployment", "StatefulSet", "ReplicaSet":
		n, msg := field(1, "spec", "replicas")
		return int32(n), msg
	case "Job":
		return job("spec")
	case "CronJob":
		return job("spec", "jobTemplate", "spec")
	default:
		return 1, ""
	}
}

// checkGuaranteedPod checks that the consumer's pod gets Guaranteed QoS once
// the action controller has set the requirements on the targeted containers:
// every container and init container needs cpu and memory limits, with
// requests equal to them or unset. Containers targeted by consumers of this
// intent get their resources from the requirements, the others keep what the
// manifest says.
func checkGuaranteedPod(r *Resolved, c *Consumer, spec *corev1.PodSpec) problems {
	var ps problems
	overlay := map[containerKey][]*Consumer{}
	for i := range r.Consumers {
		k := &r.Consumers[i]
		if k.Manifest >= 0 && k.Target.Container != "" {
			key := containerKey{k.Manifest, k.Target.Container}
			overlay[key] = append(overlay[key], k)
		}
	}
	u := r.Manifests[c.Manifest]
	check := func(what string, ct *corev1.Container) {
		requests := ct.Resources.Requests.DeepCopy()
		limits := ct.Resources.Limits.DeepCopy()
		if requests == nil {
			requests = corev1.ResourceList{}
		}
		if limits == nil {
			limits = corev1.ResourceList{}
		}
		for _, k := range overlay[containerKey{c.Manifest, ct.Name}] {
			for n, q := range k.Requests {
				requests[n] = q
			}
			for n, q := range k.Limits {
				limits[n] = q
			}
		}
		var why []string
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if msg := guaranteed(requests, limits, name); msg != "" {
				why = append(why, msg)
			}
		}
		if len(why) > 0 {
			ps.add(ReasonInvalidWorkload, c.Name,
				"exclusiveCPU needs Guaranteed QoS for the whole pod, but %s %q of %s %s: %s; give it cpu and memory limits in the manifest, with requests equal to them or unset",
				what, ct.Name, u.GetKind(), u.GetName(), strings.Join(why, ", "))
		}
	}
	for i := range spec.InitContainers {
		check("init container", &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		check("container", &spec.Containers[i])
	}
	return ps
}

func containerNames(cs []corev1.Container) string {
	names := make([]string, len(cs))
	for i := range cs {
		names[i] = cs[i].Name
	}
	return strings.Join(names, ", ")
}
