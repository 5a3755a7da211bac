package inventory

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// NodeInfo is what fleetfit knows about one node and the pods bound to it.
type NodeInfo struct {
	Name string
	// Ready is true when the node's Ready condition is True.
	Ready bool
	// Schedulable is true when the node is Ready and not cordoned; only
	// schedulable nodes count as room for new pods.
	Schedulable bool
	// Taints are the node's taints sorted by key, value and effect, without
	// timeAdded, so that alike nodes compare equal.
	Taints []corev1.Taint
	// Features are the node's labels selected by the feature prefixes.
	Features map[string]string
	// Capacity and Allocatable are copied from the node's status.
	Capacity, Allocatable Vector
	// Requested is the sum of PodRequests over the pods that occupy the
	// node, including one "pods" slot each.
	Requested Vector
	// Pods is the number of pods that occupy the node.
	Pods int
}

// Free returns allocatable − requested for every allocatable resource,
// never below zero. A resource the node does not have is never free, even if
// some pod requests it.
func (n *NodeInfo) Free() Vector {
	return freeOf(n.Allocatable, n.Requested)
}

// freeOf restricts allocatable − requested to allocatable's names.
func freeOf(allocatable, requested Vector) Vector {
	out := make(Vector, 0, len(allocatable))
	j := 0
	for _, a := range allocatable {
		for j < len(requested) && requested[j].Name < a.Name {
			j++
		}
		free := a.Milli
		if j < len(requested) && requested[j].Name == a.Name {
			free = max(free-requested[j].Milli, 0)
		}
		if free > 0 {
			out = append(out, Amount{Name: a.Name, Milli: free})
		}
	}
	return out
}

// nodeFacts is what the cluster keeps of a Node object: everything that
// decides the node's shape, computed once per node update.
type nodeFacts struct {
	ready, schedulable    bool
	taints                []corev1.Taint
	features              map[string]string
	capacity, allocatable Vector
	// shapeKey encodes what nodes of one shape share; see shapeKeyOf.
	shapeKey string
}

func newNodeFacts(node *corev1.Node, prefixes []string) *nodeFacts {
	f := &nodeFacts{
		ready:       isReady(node),
		features:    featureLabels(node.Labels, prefixes),
		capacity:    NewVector(node.Status.Capacity),
		allocatable: NewVector(node.Status.Allocatable),
	}
	f.schedulable = f.ready && !node.Spec.Unschedulable
	f.taints = normalizeTaints(node.Spec.Taints)
	f.shapeKey = shapeKeyOf(f)
	return f
}

func isReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// featureLabels returns the labels whose key starts with one of prefixes,
// or nil when there are none.
func featureLabels(labels map[string]string, prefixes []string) map[string]string {
	var out map[string]string
	for k, v := range labels {
		for _, p := range prefixes {
			if strings.HasPrefix(k, p) {
				if out == nil {
					out = map[string]string{}
				}
				out[k] = v
				break
			}
		}
	}
	return out
}

// normalizeTaints copies taints without timeAdded (it differs between
// otherwise alike nodes and says nothing about what fits) in a fixed order.
func normalizeTaints(taints []corev1.Taint) []corev1.Taint {
	if len(taints) == 0 {
		return nil
	}
	out := make([]corev1.Taint, len(taints))
	for i, t := range taints {
		out[i] = corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
	}
	slices.SortFunc(out, func(a, b corev1.Taint) int {
		return strings.Compare(a.Key+"\x00"+a.Value+"\x00"+string(a.Effect), b.Key+"\x00"+b.Value+"\x00"+string(b.Effect))
	})
	return out
}

func (f *nodeFacts) info(name string, requested Vector, pods int) NodeInfo {
	return NodeInfo{
		Name:        name,
		Ready:       f.ready,
		Schedulable: f.schedulable,
		Taints:      slices.Clone(f.taints),
		Features:    maps.Clone(f.features),
		Capacity:    f.capacity,
		Allocatable: f.allocatable,
		Requested:   requested,
		Pods:        pods,
	}
}
