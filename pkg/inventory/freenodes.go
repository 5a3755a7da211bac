package inventory

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NodeRun is a run of nodes of one shape that have the same free amounts: nodes First to
// First+Count-1 of the shape, numbered from 0 in the order of the shape's free vectors. It is
// what the summary guarantees (see the package's Accuracy section): Count real nodes of the
// shape, each with at least Free free. Labels and Taints are the shape's and are shared with
// the View: read them, never write them.
type NodeRun struct {
	Shape  string
	First  int64
	Count  int64
	Labels map[string]string
	Taints []corev1.Taint

	names []corev1.ResourceName // the shape's, sorted
	free  []int64               // indexed like names
}

// Free returns the milli-amount of name free on each node of the run.
func (r *NodeRun) Free(name corev1.ResourceName) int64 {
	i, ok := slices.BinarySearch(r.names, name)
	if !ok {
		return 0
	}
	return r.free[i]
}

// AppendFreeNodes appends to out the schedulable nodes of the Allocation's View, with what is
// free on them after the Allocation's placements (in-flight reservations placed with Place,
// typically), in the View's shape order and, within a shape, in the order of its free vectors.
// A shape's node numbers are stable for one Allocation: runs are never merged or reordered by
// this call. The runs share the Allocation's memory: they are valid until its next Place or
// Reset.
func (a *Allocation) AppendFreeNodes(out []NodeRun) []NodeRun {
	for i := range a.view.shapes {
		s := &a.view.shapes[i]
		if !s.schedulable {
			continue
		}
		first := int64(0)
		for _, vec := range a.shapes[i].vectors {
			if vec.count <= 0 {
				continue
			}
			out = append(out, NodeRun{Shape: s.name, First: first, Count: vec.count, Labels: s.labels, Taints: s.taints, names: s.names, free: vec.free})
			first += vec.count
		}
	}
	return out
}

// MatchesLabels reports whether labels meet every feature requirement of s; a nil Selector
// matches everything.
func (s *Selector) MatchesLabels(labels map[string]string) bool { return s.matchesLabels(labels) }

// Tolerates reports whether s tolerates every NoSchedule and NoExecute taint of taints, the
// rule every fit query of a View applies to a shape's nodes.
func (s *Selector) Tolerates(taints []corev1.Taint) bool {
	_, untolerated := s.untolerated(taints)
	return !untolerated
}

// IsExtendedResource reports whether name is an extended resource: a domain-qualified name
// outside the kubernetes.io domain, such as nvidia.com/gpu, as Kubernetes defines it.
func IsExtendedResource(name corev1.ResourceName) bool {
	n := string(name)
	return strings.Contains(n, "/") && !strings.Contains(n, "kubernetes.io/") && !strings.HasPrefix(n, "requests.")
}

// ExtendedResourceTolerations returns, for each extended resource among names, in the order
// given, the toleration Kubernetes' ExtendedResourceToleration admission gives a pod that asks
// for it: the resource's own NoSchedule taint (nvidia.com/gpu:NoSchedule) is tolerated, so a
// GPU node's taint keeps off the pods that do not ask for a GPU and only those.
func ExtendedResourceTolerations(names []corev1.ResourceName) []corev1.Toleration {
	var out []corev1.Toleration
	for _, name := range names {
		if IsExtendedResource(name) {
			out = append(out, corev1.Toleration{Key: string(name), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	return out
}
