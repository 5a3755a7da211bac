package inventory

import (
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Autoscaling pools
//
// A report may list the cluster's autoscaling pools (a Karpenter NodePool,
// say) with the shapes of node each can add and how many before its limits.
// A View reads every shape of a ready pool as a kind of node that does not
// exist yet: maxNodes empty nodes with the shape's allocatable, the pool's
// labels and the shape's, and the pool's taints. They never count as room:
// View's own answers (MaxReplicas, FitsOnOneNode) and an Allocation see only
// the nodes there are, until the Allocation is told it may scale up
// (Allocation.ScaleUp). Then a replica that no existing node takes may go to
// a new node of a pool, which the Allocation charges to the pool's limits:
// a node of a shape is added only while the pool's limits minus its usage
// still hold the shape's allocatable (and one more node, when the pool
// limits nodes), however many shapes the pool has and however many
// placements an Allocation holds. Launches says which nodes were added.

// nodesLimit is the pseudo resource under which a pool may limit its nodes.
const nodesLimit corev1.ResourceName = "nodes"

// viewPool is one ready pool of a View.
type viewPool struct {
	name string
	// limited are the resources the pool limits, sorted, with budget their
	// limit minus usage, indexed alike. A pool over any of its limits adds no
	// node, as Karpenter does.
	limited []corev1.ResourceName
	budget  []int64
	// shapes index View.poolShapes.
	shapes []int
}

// poolShape is what an Allocation needs of one shape of a pool, beside its
// viewShape.
type poolShape struct {
	pool int
	name string
	// cost is what one node of the shape takes of each of the pool's
	// limited resources, indexed like viewPool.limited.
	cost []int64
}

// indexPools reads the ready pools of st. A pool that is not ready, or whose
// shapes are unknown, adds nothing.
func (v *View) indexPools(st *v1alpha1.ClusterInventoryStatus) {
	for i := range st.NodePools {
		p := &st.NodePools[i]
		if !p.Ready || len(p.Shapes) == 0 {
			continue
		}
		vp := viewPool{name: p.Name}
		for name := range p.Limits {
			vp.limited = append(vp.limited, name)
		}
		slices.Sort(vp.limited)
		for _, name := range vp.limited {
			limit, usage := MilliOf(p.Limits[name]), MilliOf(p.Usage[name])
			vp.budget = append(vp.budget, limit-usage)
		}
		for j := range p.Shapes {
			ps := &p.Shapes[j]
			if ps.MaxNodes < 0 {
				continue
			}
			alloc := NewVector(ps.Allocatable)
			labels := maps.Clone(p.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
			maps.Copy(labels, ps.Labels)
			s := viewShape{
				name:        p.Name + "/" + ps.Name,
				schedulable: true,
				labels:      labels,
				taints:      normalizeTaints(p.Taints),
				podSlots:    alloc.Get(corev1.ResourcePods) > 0,
			}
			free := make([]int64, 0, len(alloc))
			for _, a := range alloc {
				s.names = append(s.names, a.Name)
				free = append(free, a.Milli)
			}
			s.vectors = []viewVector{{count: int64(min(ps.MaxNodes, v1alpha1.MaxPoolNodes)), free: free}}
			cost := make([]int64, len(vp.limited))
			for k, name := range vp.limited {
				if name == nodesLimit {
					cost[k] = 1000
					continue
				}
				cost[k] = alloc.Get(name)
			}
			vp.shapes = append(vp.shapes, len(v.poolShapes))
			v.poolShapes = append(v.poolShapes, s)
			v.poolShapeInfo = append(v.poolShapeInfo, poolShape{pool: len(v.pools), name: ps.Name, cost: cost})
		}
		if len(vp.shapes) > 0 {
			v.pools = append(v.pools, vp)
		}
	}
}

// CanScaleUp reports whether the cluster has a ready pool with known shapes:
// one at its limits counts, and adds no node, so that a reason can say so.
func (v *View) CanScaleUp() bool { return len(v.poolShapes) > 0 }

// affordable is how many nodes of pool shape j the budget still allows.
func affordable(budget []int64, cost []int64) int64 {
	n := int64(math.MaxInt64)
	for k, c := range cost {
		switch {
		case budget[k] < 0:
			return 0
		case c > 0:
			n = min(n, budget[k]/c)
		}
	}
	return n
}

// Launch is the nodes an Allocation added to one shape of a pool.
type Launch struct {
	Pool, Shape string
	// Nodes added, and More: how many nodes of the shape the pool's limits
	// allowed before them, given the nodes the Allocation added to its other
	// shapes (at most the shape's maxNodes).
	Nodes, More int64
}

func (l Launch) String() string {
	return fmt.Sprintf("%d %s of %s from NodePool %s (limit: %d more)", l.Nodes, plural(l.Nodes, "node", "nodes"), l.Shape, l.Pool, l.More)
}

// ScaleUp lets later Place calls add nodes of the cluster's pools, and
// returns whether there is a pool to add them. Replicas go to the nodes
// there are while any takes them (best fit counts new nodes like others).
func (a *Allocation) ScaleUp() bool { return a.SetScaleUp(true) }

// SetScaleUp lets later Place calls add nodes of the cluster's pools, or
// stops them from adding more (the nodes added stay), and returns whether
// there is a pool to add them.
func (a *Allocation) SetScaleUp(on bool) bool {
	a.scaleUp = on
	return len(a.view.poolShapes) > 0
}

// PlaceScalingUp is Place on the nodes there are, then, for the replicas they cannot take,
// on nodes the cluster's pools may add (the Allocation does not stay in scale-up mode). It
// returns how many replicas it placed and whether new nodes took some.
func (a *Allocation) PlaceScalingUp(r *Request, replicas int64) (placed int64, scaled bool) {
	placed = a.Place(r, replicas)
	if placed < replicas && a.SetScaleUp(true) {
		more := a.Place(r, replicas-placed)
		a.SetScaleUp(false)
		placed, scaled = placed+more, more > 0
	}
	return placed, scaled
}

// Launches returns the nodes the Allocation added, by pool and shape.
func (a *Allocation) Launches() []Launch {
	var out []Launch
	for j, n := range a.launched {
		if n == 0 {
			continue
		}
		info := &a.view.poolShapeInfo[j]
		left := min(affordable(a.budget[info.pool], info.cost), a.view.poolShapes[j].vectors[0].count-n)
		out = append(out, Launch{Pool: a.view.pools[info.pool].name, Shape: info.name, Nodes: n, More: n + left})
	}
	return out
}

// isPool reports whether the Allocation's shape i is a pool's, and which.
func (a *Allocation) isPool(i int) (int, bool) {
	j := i - len(a.view.shapes)
	return j, j >= 0
}

// shapeAt is the View's shape i of the Allocation: a node shape, or after
// them a pool's.
func (a *Allocation) shapeAt(i int) *viewShape {
	if j, ok := a.isPool(i); ok {
		return &a.view.poolShapes[j]
	}
	return &a.view.shapes[i]
}

// newNodes is how many new nodes of vector vi of shape i may still be
// added: all of a node shape's, and as many as the pool's budget allows of
// the first vector of a pool's shape (its nodes not added yet).
func (a *Allocation) newNodes(i, vi int, count int64) int64 {
	j, ok := a.isPool(i)
	if !ok || vi != 0 {
		return count
	}
	info := &a.view.poolShapeInfo[j]
	return min(count, affordable(a.budget[info.pool], info.cost))
}

// charge takes nodes new nodes of pool shape j from its pool's budget.
func (a *Allocation) charge(j int, nodes int64) {
	info := &a.view.poolShapeInfo[j]
	b := a.budget[info.pool]
	for k, c := range info.cost {
		b[k] -= nodes * c
	}
	a.launched[j] += nodes
}

// PoolRoom is how many nodes of one shape a pool can still add.
type PoolRoom struct {
	Pool, Shape string
	Nodes       int64
}

// PoolRooms lists, per ready pool of st and shape, the nodes it can add before one of its
// limits (each shape on its own: nodes of one shape take room from the others), in the
// report's order.
func PoolRooms(st *v1alpha1.ClusterInventoryStatus) []PoolRoom {
	v := &View{}
	v.indexPools(st)
	var out []PoolRoom
	for j := range v.poolShapes {
		info := &v.poolShapeInfo[j]
		out = append(out, PoolRoom{Pool: v.pools[info.pool].name, Shape: info.name, Nodes: v.poolRoom(j)})
	}
	return out
}

// poolRoom is how many nodes of pool shape j the View's pool can add: the shape's maxNodes,
// within what the pool's limits allow.
func (v *View) poolRoom(j int) int64 {
	info := &v.poolShapeInfo[j]
	return min(v.poolShapes[j].vectors[0].count, affordable(v.pools[info.pool].budget, info.cost))
}
