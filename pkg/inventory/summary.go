package inventory

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Summarize returns the cluster's report, leaving agentVersion, revision and
// observedAt to the agent. The result shares no memory with c.
//
// Contents:
//   - resources: per resource, sorted by name, the sums over all nodes of
//     capacity, allocatable and requested, and the sum of free over
//     schedulable nodes only (Ready and not cordoned), because only there can
//     new pods go. Free is summed per node and floored at zero on each node,
//     so it is not allocatable − requested when some node is unschedulable or
//     over-committed. Pods bound to a node name with no Node are left out.
//     Free bytes are rounded down by at most 1% to a whole binary unit (see
//     sum.freeQuantity), so that they print as such.
//   - nodeShapes: sorted by name, one per group of nodes sharing
//     schedulability, taints, feature labels and allocatable, each with its
//     free summary as described on the package, capped as Config says.
//   - reportedLabels: the prefixes and keys that select the feature labels,
//     so that the hub knows which labels a node lacks and which it cannot see.
//
// The report is deterministic: the same nodes and pods give the same report
// whatever the order of the events that brought them.
func (c *Cluster) Summarize() v1alpha1.ClusterInventoryStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flush()

	var st v1alpha1.ClusterInventoryStatus
	shapes := make([]*shape, 0, len(c.shapes))
	var nodes, ready int
	for _, s := range c.shapes {
		shapes = append(shapes, s)
		nodes += s.nodes
		if s.facts.schedulable {
			ready += s.nodes
		}
	}
	st.NodeCount, st.ReadyNodeCount = int32Count(nodes), int32Count(ready)
	slices.SortFunc(shapes, func(a, b *shape) int {
		if c := strings.Compare(a.hash, b.hash); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	st.NodeShapes = make([]v1alpha1.NodeShape, len(shapes))
	limit := c.cfg.vectorsPerShape(len(shapes))
	for i, s := range shapes {
		name := s.hash
		// Shapes whose hashes collide keep the hash with a suffix in key
		// order, so names stay unique and stable while the set is stable.
		if n := collisionIndex(shapes, i); n > 0 {
			name += "-" + strconv.Itoa(n)
		}
		st.NodeShapes[i] = s.render(name, limit)
	}
	st.ShapeCount = int32Count(len(shapes))

	names := make([]corev1.ResourceName, 0, len(c.totals))
	for name, s := range c.totals {
		if s.capacity.isZero() && s.allocatable.isZero() && s.requested.isZero() && s.free.isZero() {
			delete(c.totals, name)
			c.recentSums = [len(c.recentSums)]*resourceSums{}
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	st.Resources = make([]v1alpha1.ResourceTotals, len(names))
	for i, name := range names {
		s := c.totals[name]
		st.Resources[i] = v1alpha1.ResourceTotals{
			Name:        name,
			Capacity:    s.capacity.quantity(name),
			Allocatable: s.allocatable.quantity(name),
			Requested:   s.requested.quantity(name),
			Free:        s.free.freeQuantity(name),
		}
	}
	st.ReportedLabels = c.cfg.reportedLabels()
	st.Devices = c.deviceReport.DeepCopy()
	if len(st.NodeShapes) == 0 {
		st.NodeShapes = nil
	}
	if len(st.Resources) == 0 {
		st.Resources = nil
	}
	return st
}

// collisionIndex returns how many shapes before i (in sorted order) share
// its hash.
func collisionIndex(shapes []*shape, i int) int {
	n := 0
	for j := i - 1; j >= 0 && shapes[j].hash == shapes[i].hash; j-- {
		n++
	}
	return n
}
