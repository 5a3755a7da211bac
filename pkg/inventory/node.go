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
	return appendFree(make(Vector, 0, len(allocatable)), allocatable, requested)
}

// appendFree appends freeOf(allocatable, requested) to out.
func appendFree(out, allocatable, requested Vector) Vector {
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
// decides the node's shape, computed once per node update. Facts are never
// modified once built, so alike nodes share one (see factsBuilder).
type nodeFacts struct {
	ready, schedulable    bool
	taints                []corev1.Taint
	features              map[string]string
	capacity, allocatable Vector
	// shapeKey encodes what nodes of one shape share; see appendShapeKey.
	shapeKey string
}

func newNodeFacts(node *corev1.Node, reported *labelFilter) *nodeFacts {
	var b factsBuilder
	b.read(node, reported, nil)
	return b.facts()
}

// factsBuilder derives nodeFacts into reusable scratch space, so that a node
// alike to one seen before costs no allocation: cachedFacts finds the shared
// facts by the key the scratch encodes.
type factsBuilder struct {
	ready, schedulable    bool
	taints                []corev1.Taint
	labels                []label // feature labels, sorted by key
	capacity, allocatable Vector
	key                   []byte // shape key, then what else facts hold
	shapeKeyLen           int
}

type label struct{ key, value string }

// read fills b from node and its devices, which may be nil: the devices'
// kinds count as resources of the node's capacity and allocatable, and the
// extended resources they hide do not.
func (b *factsBuilder) read(node *corev1.Node, reported *labelFilter, devices *NodeDevices) {
	b.ready = isReady(node)
	b.schedulable = b.ready && !node.Spec.Unschedulable
	b.labels = appendFeatureLabels(b.labels[:0], node.Labels, reported)
	b.taints = appendNormalizedTaints(b.taints[:0], node.Spec.Taints)
	b.capacity = appendVector(b.capacity[:0], node.Status.Capacity)
	b.allocatable = appendVector(b.allocatable[:0], node.Status.Allocatable)
	if devices != nil {
		b.capacity = withDevices(b.capacity, devices)
		b.allocatable = withDevices(b.allocatable, devices)
	}
	b.key = appendShapeKey(b.key[:0], b.schedulable, b.taints, b.labels, b.allocatable)
	b.shapeKeyLen = len(b.key)
	// The rest of the facts, after a separator that the shape key never
	// contains.
	b.key = append(b.key, 3)
	if b.ready {
		b.key = append(b.key, 'R')
	}
	b.key = append(b.key, 1)
	b.key = appendAmounts(b.key, b.capacity)
}

// facts returns new facts holding copies of b's scratch.
func (b *factsBuilder) facts() *nodeFacts {
	f := &nodeFacts{
		ready:       b.ready,
		schedulable: b.schedulable,
		capacity:    slices.Clone(b.capacity),
		allocatable: slices.Clone(b.allocatable),
		shapeKey:    string(b.key[:b.shapeKeyLen]),
	}
	if len(b.taints) > 0 {
		f.taints = slices.Clone(b.taints)
	}
	if len(b.labels) > 0 {
		f.features = make(map[string]string, len(b.labels))
		for _, l := range b.labels {
			f.features[l.key] = l.value
		}
	}
	return f
}

// cachedFacts returns the facts b describes, shared with earlier alike nodes
// through cache. The cache only saves allocations: it is cleared when it
// holds more than limit entries, so it cannot grow without bound.
func (b *factsBuilder) cachedFacts(cache map[string]*nodeFacts, limit int) *nodeFacts {
	if f, ok := cache[string(b.key)]; ok {
		return f
	}
	if len(cache) >= limit {
		clear(cache)
	}
	f := b.facts()
	cache[string(b.key)] = f
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

// appendFeatureLabels appends the labels that reported selects, sorted by
// key.
func appendFeatureLabels(out []label, labels map[string]string, reported *labelFilter) []label {
	for k, v := range labels {
		if reported.selects(k) {
			out = append(out, label{k, v})
		}
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].key < out[j-1].key; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// featureLabels returns the labels that reported selects, or nil when there
// are none.
func featureLabels(labels map[string]string, reported *labelFilter) map[string]string {
	var out map[string]string
	for _, l := range appendFeatureLabels(nil, labels, reported) {
		if out == nil {
			out = map[string]string{}
		}
		out[l.key] = l.value
	}
	return out
}

// appendNormalizedTaints appends taints without timeAdded (it differs
// between otherwise alike nodes and says nothing about what fits) in a fixed
// order: by key, value and effect.
func appendNormalizedTaints(out, taints []corev1.Taint) []corev1.Taint {
	for _, t := range taints {
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	slices.SortFunc(out, compareTaints)
	return out
}

// compareTaints orders taints by key, value and effect, which is the order
// of their fields joined with NULs since no field can contain one.
func compareTaints(a, b corev1.Taint) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if c := strings.Compare(a.Value, b.Value); c != 0 {
		return c
	}
	return strings.Compare(string(a.Effect), string(b.Effect))
}

// normalizeTaints copies taints as appendNormalizedTaints orders them, or
// returns nil when there are none.
func normalizeTaints(taints []corev1.Taint) []corev1.Taint {
	if len(taints) == 0 {
		return nil
	}
	return appendNormalizedTaints(make([]corev1.Taint, 0, len(taints)), taints)
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

// withDevices adds the kinds of devices to v, which holds a node's
// resources, and drops the resources they hide.
func withDevices(v Vector, devices *NodeDevices) Vector {
	if len(devices.Hidden) > 0 {
		v = slices.DeleteFunc(v, func(a Amount) bool { return slices.Contains(devices.Hidden, a.Name) })
	}
	v = append(v, devices.Capacity...)
	sortAmounts(v)
	return v
}
