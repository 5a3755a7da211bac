package inventory

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Cluster is the running inventory of one cluster, fed by node and pod
// events (typically informer handlers) and summarised on demand.
//
// Updates are cheap: a pod event costs O(resources) and only marks its node;
// a node event re-derives that node's facts. Summarize then re-files the
// marked nodes into their shapes and re-renders only the shapes that
// changed, so its cost follows the number of changes and shapes, not the
// number of nodes.
//
// A Cluster is safe for concurrent use.
type Cluster struct {
	mu  sync.Mutex
	cfg Config
	// labels selects the feature labels, as cfg's prefixes and keys say.
	labels labelFilter

	nodes  map[string]*nodeEntry
	pods   *podIndex         // the pods that occupy a node
	shapes map[string]*shape // by shape key
	totals map[corev1.ResourceName]*resourceSums
	// recentSums are some of totals, searched before the map: a cluster has
	// a handful of resources, and a node update adds to each several times.
	recentSums [8]*resourceSums
	nextRecent int

	dirty       []*nodeEntry
	lastEntry   *nodeEntry // the entry last looked up, still in nodes
	scratch     []byte
	scratchFree []int64

	// Alike nodes share their facts and alike pods their request vectors,
	// found by encoded key; both caches are cleared when they grow large.
	facts        map[string]*nodeFacts
	factsScratch factsBuilder
	requests     map[string]*Vector
	requestKey   []byte

	// deviceReport is the report of device kinds SetDevices was last given;
	// nil until then.
	deviceReport *v1alpha1.ReportedDevices
}

// requestCacheLimit bounds the distinct request vectors remembered; pods
// with other requests still work, they just share less.
const requestCacheLimit = 4096

// nodeEntry is one node name: the Node if it has been seen, and the pods
// bound to that name, which may arrive before their Node does.
type nodeEntry struct {
	name  string
	facts *nodeFacts // nil while no Node of this name exists
	// node is the Node the facts were read from, kept to read it again when
	// its devices change.
	node *corev1.Node
	// devices are the node's DRA devices, nil when it has none; their used
	// counts are part of requested.
	devices *NodeDevices
	// requested is owned by the entry and updated in place as pods come and
	// go; it is never shared, so whatever leaves the entry is a copy.
	requested Vector
	pods      int
	dirty     bool

	// reported is what the node last contributed to totals and shapes, so
	// that it can be taken back exactly; its shape is nil when it
	// contributed nothing. Its vectors are the entry's own, reused from one
	// flush to the next.
	reported contribution
}

type contribution struct {
	facts     *nodeFacts
	requested Vector
	free      Vector
	shape     *shape
	bucket    *bucket
}

type podEntry struct {
	node     *nodeEntry
	requests *Vector // shared, never written
}

// resourceSums are the running totals of one resource.
type resourceSums struct {
	name                                   corev1.ResourceName
	capacity, allocatable, requested, free sum
}

// NewCluster returns an empty inventory that reports according to cfg.
// cfg is fixed for the Cluster's life because it decides which shape each
// node belongs to as the node arrives; only the feature label keys may
// change, with SetFeatureLabelKeys.
func NewCluster(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid inventory config: %w", err)
	}
	cfg.FeatureLabelPrefixes = append([]string(nil), cfg.FeatureLabelPrefixes...)
	cfg.FeatureLabelKeys = cfg.reportedLabels().Keys
	steps := cfg.RoundingSteps
	cfg.RoundingSteps = make(map[corev1.ResourceName]resource.Quantity, len(steps))
	for k, v := range steps {
		cfg.RoundingSteps[k] = v.DeepCopy()
	}
	return &Cluster{
		cfg:      cfg,
		labels:   newLabelFilter(cfg.FeatureLabelPrefixes, cfg.FeatureLabelKeys),
		nodes:    map[string]*nodeEntry{},
		pods:     newPodIndex(),
		shapes:   map[string]*shape{},
		totals:   map[corev1.ResourceName]*resourceSums{},
		facts:    map[string]*nodeFacts{},
		requests: map[string]*Vector{},
	}, nil
}

// UpsertNode records the current state of a Node.
func (c *Cluster) UpsertNode(node *corev1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.upsertNode(node)
}

func (c *Cluster) upsertNode(node *corev1.Node) {
	e := c.entry(node.Name)
	e.node = node
	c.factsScratch.read(node, &c.labels, e.devices)
	e.facts = c.factsScratch.cachedFacts(c.facts, 2*len(c.nodes)+64)
	c.markDirty(e)
}

// SetFeatureLabelKeys makes the inventory report node labels with these keys
// as features, besides those its prefixes select, and reads nodes again
// with them: nodes must be the cluster's current Nodes, since the inventory
// keeps only the labels it reports and cannot find the others by itself.
// The keys must be valid label keys, at most v1alpha1.MaxLabelKeys of them;
// otherwise nothing changes and the error says why.
//
// A key whose label has more than MaxLabelKeyValues distinct values across
// nodes is left out and returned in omitted: a label that names its node,
// such as kubernetes.io/hostname, would make every node a shape of its own,
// and the report would grow with the cluster until it no longer fit in one
// object. Requirements on an omitted key stay unknown on the cluster. Call
// it again as nodes change (the agent does before every report), so that a
// key is left out, or taken back, as its values grow or shrink. It reports
// whether the keys reported changed.
func (c *Cluster) SetFeatureLabelKeys(keys []string, nodes []*corev1.Node) (changed bool, omitted []string, err error) {
	if err := validateLabelKeys(nil, keys); err != nil {
		return false, nil, err
	}
	cfg := Config{FeatureLabelKeys: keys}
	keys, omitted = keysWithFewValues(cfg.reportedLabels().Keys, nodes)
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Equal(keys, c.cfg.FeatureLabelKeys) {
		return false, omitted, nil
	}
	c.cfg.FeatureLabelKeys = keys
	c.labels = newLabelFilter(c.cfg.FeatureLabelPrefixes, keys)
	// Facts cached under the old keys hold the old feature labels.
	clear(c.facts)
	for _, n := range nodes {
		c.upsertNode(n)
	}
	return true, omitted, nil
}

// MaxLabelKeyValues is how many distinct values a label key the hub asks for
// may have across a cluster's nodes and still be reported (see
// SetFeatureLabelKeys). Hardware labels have a handful: GPU models, CPU
// generations, instance types.
const MaxLabelKeyValues = 32

// keysWithFewValues splits keys into those with at most MaxLabelKeyValues
// distinct values across nodes and the others, both in the order of keys.
func keysWithFewValues(keys []string, nodes []*corev1.Node) (few, many []string) {
	for _, k := range keys {
		values := map[string]struct{}{}
		for _, n := range nodes {
			if v, ok := n.Labels[k]; ok {
				values[v] = struct{}{}
				if len(values) > MaxLabelKeyValues {
					break
				}
			}
		}
		if len(values) > MaxLabelKeyValues {
			many = append(many, k)
		} else {
			few = append(few, k)
		}
	}
	return few, many
}

// DeleteNode forgets a Node. Pods still bound to its name are kept, and
// counted again if a Node of that name comes back.
func (c *Cluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.nodes[name]; ok {
		e.facts, e.node = nil, nil
		c.markDirty(e)
	}
}

// SetDevices records every node's Dynamic Resource Allocation devices (see
// SummarizeDevices) and the report of their kinds, replacing what was set
// before: a node missing from nodes has none. Nodes whose devices changed
// are filed again; the others cost nothing.
func (c *Cluster) SetDevices(nodes map[string]*NodeDevices, report *v1alpha1.ReportedDevices) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deviceReport = report.DeepCopy()
	for name, e := range c.nodes {
		if e.devices != nil && nodes[name] == nil {
			c.setNodeDevices(e, nil)
		}
	}
	for name, d := range nodes {
		c.setNodeDevices(c.entry(name), d)
	}
}

func (c *Cluster) setNodeDevices(e *nodeEntry, d *NodeDevices) {
	if e.devices.equal(d) {
		return
	}
	if e.devices != nil {
		e.requested = e.requested.subInPlace(e.devices.Used)
	}
	if d != nil {
		d = &NodeDevices{Capacity: slices.Clone(d.Capacity), Used: slices.Clone(d.Used), Hidden: slices.Clone(d.Hidden)}
		e.requested = e.requested.addInPlace(d.Used)
	}
	e.devices = d
	if e.node != nil {
		c.factsScratch.read(e.node, &c.labels, e.devices)
		e.facts = c.factsScratch.cachedFacts(c.facts, 2*len(c.nodes)+64)
	}
	c.markDirty(e)
}

// UpsertPod records the current state of a Pod. Pods that are not bound or
// have terminated take nothing and are dropped.
func (c *Cluster) UpsertPod(pod *corev1.Pod) {
	if !occupiesNode(pod) {
		c.DeletePod(pod.Namespace, pod.Name)
		return
	}
	a := accumulators.Get().(*podAccumulator)
	defer accumulators.Put(a)
	requests, ok := a.podRequests(pod) // a's scratch until interned
	if !ok {
		requests = slowPodRequests(pod)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r, found := c.pods.upsert(pod.Namespace, pod.Name)
	if found {
		if r.node.name == pod.Spec.NodeName && r.requests.Equal(requests) {
			return
		}
		c.unbind(r.podEntry)
	}
	r.podEntry = podEntry{node: c.entry(pod.Spec.NodeName), requests: c.intern(requests)}
	e := r.node
	e.requested = e.requested.addInPlace(*r.requests)
	e.pods++
	c.markDirty(e)
}

// DeletePod forgets a Pod.
func (c *Cluster) DeletePod(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pods.remove(namespace, name); ok {
		c.unbind(old)
	}
}

// Node returns what the inventory knows of one node, and false when no Node
// of that name has been recorded.
func (c *Cluster) Node(name string) (NodeInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.nodes[name]
	if !ok || e.facts == nil {
		return NodeInfo{}, false
	}
	return e.facts.info(name, slices.Clone(e.requested), e.pods), true
}

func (c *Cluster) entry(name string) *nodeEntry {
	// Pods often arrive node by node; skip the map then.
	if e := c.lastEntry; e != nil && e.name == name {
		return e
	}
	e, ok := c.nodes[name]
	if !ok {
		e = &nodeEntry{name: name}
		c.nodes[name] = e
	}
	c.lastEntry = e
	return e
}

// intern returns a vector equal to v that the cluster keeps and never
// writes to, shared with earlier pods of the same requests.
func (c *Cluster) intern(v Vector) *Vector {
	key := c.requestKey[:0]
	for _, a := range v {
		key = append(key, a.Name...)
		key = binary.LittleEndian.AppendUint64(append(key, 0), uint64(a.Milli))
	}
	c.requestKey = key
	if w, ok := c.requests[string(key)]; ok {
		return w
	}
	if len(c.requests) >= requestCacheLimit {
		clear(c.requests)
	}
	w := slices.Clone(v)
	c.requests[string(key)] = &w
	return &w
}

func (c *Cluster) unbind(p podEntry) {
	e := p.node
	e.requested = e.requested.subInPlace(*p.requests)
	e.pods--
	c.markDirty(e)
}

func (c *Cluster) markDirty(e *nodeEntry) {
	if !e.dirty {
		e.dirty = true
		c.dirty = append(c.dirty, e)
	}
}

// flush re-files every marked node: it takes back what the node reported
// last and adds what it reports now.
func (c *Cluster) flush() {
	for _, e := range c.dirty {
		e.dirty = false
		r := &e.reported
		if r.shape != nil {
			c.account(r, (*sum).sub)
			r.shape.removeNode(r.bucket)
			if r.shape.nodes == 0 {
				delete(c.shapes, r.shape.key)
			}
			*r = contribution{requested: r.requested[:0], free: r.free[:0]}
		}
		if e.facts == nil {
			if e.pods == 0 {
				delete(c.nodes, e.name)
				if c.lastEntry == e {
					c.lastEntry = nil
				}
			}
			continue
		}
		s, ok := c.shapes[e.facts.shapeKey]
		if !ok {
			s = newShape(e.facts, &c.cfg)
			c.shapes[s.key] = s
		}
		r.facts, r.shape = e.facts, s
		r.requested = append(r.requested, e.requested...)
		if e.facts.schedulable {
			r.free = appendFree(r.free, e.facts.allocatable, e.requested)
		}
		r.bucket = s.addNode(e.requested, &c.scratch, &c.scratchFree)
		c.account(r, (*sum).add)
	}
	c.dirty = c.dirty[:0]
}

// account adds (or subtracts) one node's contribution to the totals.
func (c *Cluster) account(r *contribution, op func(*sum, int64)) {
	for _, a := range r.facts.capacity {
		op(&c.sums(a.Name).capacity, a.Milli)
	}
	for _, a := range r.facts.allocatable {
		op(&c.sums(a.Name).allocatable, a.Milli)
	}
	for _, a := range r.requested {
		op(&c.sums(a.Name).requested, a.Milli)
	}
	for _, a := range r.free {
		op(&c.sums(a.Name).free, a.Milli)
	}
}

func (c *Cluster) sums(name corev1.ResourceName) *resourceSums {
	for _, s := range c.recentSums {
		if s != nil && s.name == name {
			return s
		}
	}
	s, ok := c.totals[name]
	if !ok {
		s = &resourceSums{name: name}
		c.totals[name] = s
	}
	c.recentSums[c.nextRecent%len(c.recentSums)] = s
	c.nextRecent++
	return s
}
