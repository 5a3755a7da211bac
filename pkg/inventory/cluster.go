package inventory

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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

	nodes  map[string]*nodeEntry
	pods   map[string]podEntry // by namespace/name; only pods that occupy a node
	shapes map[string]*shape   // by shape key
	totals map[corev1.ResourceName]*resourceSums

	dirty       []*nodeEntry
	scratch     []byte
	scratchFree []int64
}

// nodeEntry is one node name: the Node if it has been seen, and the pods
// bound to that name, which may arrive before their Node does.
type nodeEntry struct {
	name      string
	facts     *nodeFacts // nil while no Node of this name exists
	requested Vector
	pods      int
	dirty     bool

	// reported is what the node last contributed to totals and shapes, so
	// that it can be taken back exactly; nil when it contributed nothing.
	reported *contribution
}

type contribution struct {
	facts     *nodeFacts
	requested Vector
	free      Vector
	shape     *shape
	bucket    *bucket
}

type podEntry struct {
	node     string
	requests Vector
}

// resourceSums are the running totals of one resource.
type resourceSums struct{ capacity, allocatable, requested, free sum }

// NewCluster returns an empty inventory that reports according to cfg.
// cfg is fixed for the Cluster's life because it decides which shape each
// node belongs to as the node arrives.
func NewCluster(cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid inventory config: %w", err)
	}
	cfg.FeatureLabelPrefixes = append([]string(nil), cfg.FeatureLabelPrefixes...)
	steps := cfg.RoundingSteps
	cfg.RoundingSteps = make(map[corev1.ResourceName]resource.Quantity, len(steps))
	for k, v := range steps {
		cfg.RoundingSteps[k] = v.DeepCopy()
	}
	return &Cluster{
		cfg:    cfg,
		nodes:  map[string]*nodeEntry{},
		pods:   map[string]podEntry{},
		shapes: map[string]*shape{},
		totals: map[corev1.ResourceName]*resourceSums{},
	}, nil
}

// UpsertNode records the current state of a Node.
func (c *Cluster) UpsertNode(node *corev1.Node) {
	facts := newNodeFacts(node, c.cfg.FeatureLabelPrefixes)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entry(node.Name)
	e.facts = facts
	c.markDirty(e)
}

// DeleteNode forgets a Node. Pods still bound to its name are kept, and
// counted again if a Node of that name comes back.
func (c *Cluster) DeleteNode(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.nodes[name]; ok {
		e.facts = nil
		c.markDirty(e)
	}
}

// UpsertPod records the current state of a Pod. Pods that are not bound or
// have terminated take nothing and are dropped.
func (c *Cluster) UpsertPod(pod *corev1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	if !occupiesNode(pod) {
		c.DeletePod(pod.Namespace, pod.Name)
		return
	}
	requests := PodRequests(pod)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pods[key]; ok {
		if old.node == pod.Spec.NodeName && old.requests.Equal(requests) {
			return
		}
		c.unbind(old)
	}
	p := podEntry{node: pod.Spec.NodeName, requests: requests}
	c.pods[key] = p
	e := c.entry(p.node)
	e.requested = e.requested.Add(p.requests)
	e.pods++
	c.markDirty(e)
}

// DeletePod forgets a Pod.
func (c *Cluster) DeletePod(namespace, name string) {
	key := namespace + "/" + name
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.pods[key]; ok {
		c.unbind(old)
		delete(c.pods, key)
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
	return e.facts.info(name, e.requested, e.pods), true
}

func (c *Cluster) entry(name string) *nodeEntry {
	e, ok := c.nodes[name]
	if !ok {
		e = &nodeEntry{name: name}
		c.nodes[name] = e
	}
	return e
}

func (c *Cluster) unbind(p podEntry) {
	e := c.nodes[p.node]
	e.requested = e.requested.Sub(p.requests)
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
		if r := e.reported; r != nil {
			c.account(r, (*sum).sub)
			r.shape.removeNode(r.bucket)
			if r.shape.nodes == 0 {
				delete(c.shapes, r.shape.key)
			}
			e.reported = nil
		}
		if e.facts == nil {
			if e.pods == 0 {
				delete(c.nodes, e.name)
			}
			continue
		}
		s, ok := c.shapes[e.facts.shapeKey]
		if !ok {
			s = newShape(e.facts, &c.cfg)
			c.shapes[s.key] = s
		}
		r := &contribution{facts: e.facts, requested: e.requested, shape: s}
		if e.facts.schedulable {
			r.free = freeOf(e.facts.allocatable, e.requested)
		}
		r.bucket = s.addNode(e.requested, &c.scratch, &c.scratchFree)
		c.account(r, (*sum).add)
		e.reported = r
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
	s, ok := c.totals[name]
	if !ok {
		s = &resourceSums{}
		c.totals[name] = s
	}
	return s
}
