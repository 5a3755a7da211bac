package inventory

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Allocation is a what-if copy of a View's free capacity: replicas placed on
// it are subtracted from the nodes that take them, so that several demands
// can be checked to fit together on one cluster, after capacity promised to
// in-flight reservations has been taken away.
//
// An Allocation is for one goroutine. Making one is cheap: it shares the
// View's free vectors and copies a shape's vectors only when it first
// changes them, and it never writes to the View, which stays safe for
// concurrent use.
//
// # Accuracy
//
// Each free vector of an Allocation stands, like the View's, for count real
// nodes that each have at least that much free: placing k replicas on one
// node of a vector with count c leaves c−1 nodes of the old vector and one
// node of the old vector minus k replicas. So every replica an Allocation
// places has a real node with room for it, next to the replicas placed
// before it, and Place is never optimistic about the nodes as summarised
// (see the package's Accuracy section, which makes the summary a lower
// bound). It may be pessimistic, for three reasons: the summary itself may
// be (rounding, truncation); packing replicas of different sizes onto nodes
// is vector bin packing, which is NP-hard, and Place is a greedy heuristic;
// and it never moves replicas it has placed.
//
// In-flight reservations are modelled, not observed: the hub places them
// with Place before what it checks, while kube-scheduler may put the real
// pods on other nodes. What fits after them is what fits if the reserved
// pods land as modelled; the total they take is right, their position may
// not be.
type Allocation struct {
	view   *View
	shapes []allocShape // indexed like view.shapes
	// machinesTaken counts, indexed like view.machines, the free machines
	// placed replicas have taken.
	machinesTaken []int64

	// Backing stores for the vectors copied and the free amounts made here.
	vectorArena []viewVector
	arena       []int64

	// scaleUp lets Place add nodes of the View's pools; budget is, per pool,
	// what its limits still allow, and launched counts, per pool shape, the
	// nodes added.
	scaleUp  bool
	budget   [][]int64
	launched []int64

	// Scratch reused by Place.
	cands    []candidate
	needBuf  []need
	boundBuf [][2]int
	reduced  []int64
}

type allocShape struct {
	vectors []viewVector
	// owned is set once the vectors are this Allocation's own copy; until
	// then they are the View's, and are copied before their first change.
	owned bool
}

// candidate is a usable shape for the request being placed.
type candidate struct {
	shape    int
	from, to int // the shape's needs in Allocation.needBuf
}

// packing is what Allocations need of a View beyond its shapes, computed
// once per View.
type packing struct {
	// scales holds, per resource, the largest amount free on one node of a
	// schedulable shape: the yardstick that makes amounts of different
	// resources comparable.
	scales Vector
	// inverse holds, per shape and indexed like its names, 1/scale (0 when
	// the scale is 0).
	inverse [][]float64
}

func (v *View) packingInfo() *packing {
	v.packingOnce.Do(func() {
		largest := map[corev1.ResourceName]int64{}
		for i := range v.shapes {
			s := &v.shapes[i]
			if !s.schedulable {
				continue
			}
			for j := range s.vectors {
				for k, name := range s.names {
					largest[name] = max(largest[name], s.vectors[j].free[k])
				}
			}
		}
		p := &packing{inverse: make([][]float64, len(v.shapes)+len(v.poolShapes))}
		for name, m := range largest {
			if m > 0 {
				p.scales = append(p.scales, Amount{Name: name, Milli: m})
			}
		}
		slices.SortFunc(p.scales, func(a, b Amount) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
		for i := range p.inverse {
			var names []corev1.ResourceName
			if i < len(v.shapes) {
				names = v.shapes[i].names
			} else {
				names = v.poolShapes[i-len(v.shapes)].names
			}
			inv := make([]float64, len(names))
			for k, name := range names {
				if m := p.scales.Get(name); m > 0 {
					inv[k] = 1 / float64(m)
				}
			}
			p.inverse[i] = inv
		}
		v.packing = p
	})
	return v.packing
}

// Allocate returns a new Allocation holding the View's free capacity.
func (v *View) Allocate() *Allocation {
	a := &Allocation{}
	a.Reset(v)
	return a
}

// Reset makes a hold v's free capacity, as v.Allocate() would, reusing a's
// memory: a worker that goes over many clusters can keep one Allocation and
// allocate nothing once its buffers have grown.
func (a *Allocation) Reset(v *View) {
	v.packingInfo()
	a.view = v
	n := len(v.shapes) + len(v.poolShapes)
	a.shapes = slices.Grow(a.shapes[:0], n)[:n]
	for i := range v.shapes {
		a.shapes[i] = allocShape{vectors: v.shapes[i].vectors}
	}
	for j := range v.poolShapes {
		a.shapes[len(v.shapes)+j] = allocShape{vectors: v.poolShapes[j].vectors}
	}
	a.scaleUp = false
	a.launched = slices.Grow(a.launched[:0], len(v.poolShapes))[:len(v.poolShapes)]
	clear(a.launched)
	a.budget = a.budget[:0]
	for _, p := range v.pools {
		a.budget = append(a.budget, slices.Clone(p.budget))
	}
	a.machinesTaken = slices.Grow(a.machinesTaken[:0], len(v.machines))[:len(v.machines)]
	clear(a.machinesTaken)
	// Nothing refers to the arenas any more, so they are reused from the
	// start.
	a.vectorArena, a.arena = a.vectorArena[:0], a.arena[:0]
}

// Place places up to replicas replicas of r, each entirely on one usable
// node (schedulable, with the features r selects and no taint r does not
// tolerate), and subtracts them from the Allocation. It returns how many it
// placed, fewer than asked only when no node can take another; one replica
// is never split across nodes.
//
// Replicas are packed onto a node while they fit together there and spread
// to other nodes when they do not. Each node is chosen best-fit: among the
// nodes that can take a replica, the one whose free amounts, after taking as
// many of the remaining replicas as fit on it, are the smallest, summed over
// all its resources, each divided by the largest amount of that resource
// free on one node of the View. Best fit rather than EMCO's most-free-first
// because the hub asks whether several demands fit together: filling the
// tightest node keeps large holes for the larger replicas still to come, and
// counting the resources the request does not need keeps it off nodes with
// scarce extras (a CPU-only replica goes to a CPU node, leaving the GPU node
// for a replica that needs both). Ties go to the first node in the View's
// order, so the result is deterministic.
//
// For a single request every chosen node takes as many replicas as fit on
// it, so a fresh Allocation places min(replicas, View.MaxReplicas(r)).
//
// A machine request takes one free machine of its type per replica, from
// those no earlier Place took, and no node capacity: the machines' reservation
// pods already hold it.
func (a *Allocation) Place(r *Request, replicas int64) int64 {
	if replicas <= 0 {
		return 0
	}
	if r.machine != nil {
		return a.placeMachines(r, replicas)
	}
	a.candidates(r)
	placed := int64(0)
	for placed < replicas {
		remaining := replicas - placed
		ci, vi, fit := a.bestNode(remaining)
		if fit == 0 {
			break
		}
		c := a.cands[ci]
		count := a.newNodes(c.shape, vi, a.shapes[c.shape].vectors[vi].count)
		if full := remaining / fit; full > 0 {
			// Every node of this vector would be chosen in turn (taking
			// replicas does not change the others' scores), so fill as
			// many as needed at once.
			nodes := min(count, full)
			a.take(c, vi, nodes, fit)
			placed += nodes * fit
			continue
		}
		a.take(c, vi, 1, remaining)
		placed += remaining
	}
	return placed
}

// candidates fills a.cands with the usable shapes that have free vectors,
// and their needs for r; there are none when r needs a label the cluster
// does not report.
func (a *Allocation) candidates(r *Request) {
	a.cands = slices.Grow(a.cands[:0], len(a.view.shapes))
	a.needBuf = slices.Grow(a.needBuf[:0], len(a.view.shapes)*(len(r.amounts)+1))
	if _, unknown := a.view.Unreported(r.sel); unknown {
		return
	}
	n := len(a.view.shapes)
	if a.scaleUp {
		n += len(a.view.poolShapes)
	}
	for i := range n {
		s := a.shapeAt(i)
		if len(a.shapes[i].vectors) == 0 || !s.usable(r.sel) {
			continue
		}
		if len(r.devices) == 0 {
			from := len(a.needBuf)
			a.needBuf = s.appendNeeds(a.needBuf, r)
			a.cands = append(a.cands, candidate{shape: i, from: from, to: len(a.needBuf)})
			continue
		}
		var bounds [][2]int
		a.needBuf, bounds = s.alternatives(a.needBuf, a.boundBuf[:0], r, a.view)
		a.boundBuf = bounds
		for _, b := range bounds {
			a.cands = append(a.cands, candidate{shape: i, from: b[0], to: b[1]})
		}
	}
}

// bestNode returns the candidate and vector of the best-fit node for up to
// remaining replicas (see Place), with how many replicas fit on it; fit is 0
// when no node can take one.
func (a *Allocation) bestNode(remaining int64) (ci, vi int, fit int64) {
	best := math.Inf(1)
	for i, c := range a.cands {
		needs := a.needBuf[c.from:c.to]
		inverse := a.view.packing.inverse[c.shape]
		vectors := a.shapes[c.shape].vectors
		for j := range vectors {
			vec := &vectors[j]
			if vec.count == 0 || (j == 0 && c.shape >= len(a.view.shapes) && a.newNodes(c.shape, j, 1) == 0) {
				continue
			}
			if !roomForOne(vec, needs) {
				continue
			}
			p := perNode(vec, needs)
			t := min(p, remaining)
			left := 0.0
			for k, f := range vec.free {
				left += float64(f) * inverse[k]
			}
			for _, n := range needs {
				left -= float64(t*n.milli) * inverse[n.index]
			}
			if left < best {
				best, ci, vi, fit = left, i, j, p
			}
		}
	}
	return ci, vi, fit
}

// roomForOne is perNode(vec, needs) > 0 without its divisions, which most
// vectors fail.
func roomForOne(vec *viewVector, needs []need) bool {
	for _, n := range needs {
		if n.index < 0 || vec.free[n.index] < n.milli {
			return false
		}
	}
	return true
}

// take puts k replicas on each of nodes nodes of vector vi of candidate c.
func (a *Allocation) take(c candidate, vi int, nodes, k int64) {
	if j, ok := a.isPool(c.shape); ok && vi == 0 {
		a.charge(j, nodes)
	}
	vectors := a.own(c.shape)
	old := vectors[vi].free
	a.reduced = append(a.reduced[:0], old...)
	for _, n := range a.needBuf[c.from:c.to] {
		// perNode > 0 guarantees every need has an index and k·milli ≤ free.
		a.reduced[n.index] -= k * n.milli
	}
	vectors[vi].count -= nodes
	// Nodes that end up alike share a vector, so the vectors stay few
	// however many replicas are placed.
	_, pool := a.isPool(c.shape)
	for j := range vectors {
		// A pool's first vector is its nodes not added yet: a node added
		// never joins them, or it would be charged twice.
		if pool && j == 0 {
			continue
		}
		if slices.Equal(vectors[j].free, a.reduced) {
			vectors[j].count += nodes
			return
		}
	}
	a.shapes[c.shape].vectors = append(vectors, viewVector{count: nodes, free: a.newFree(a.reduced)})
}

// own returns shape i's vectors, copied first unless the Allocation
// already owns them.
func (a *Allocation) own(i int) []viewVector {
	s := &a.shapes[i]
	if !s.owned {
		// A little room to add vectors; more grow the slice away from the
		// arena.
		n, size := len(a.vectorArena), len(s.vectors)+2
		if cap(a.vectorArena)-n < size {
			a.vectorArena, n = make([]viewVector, 0, max(64, 4*size)), 0
		}
		a.vectorArena = a.vectorArena[:n+size]
		vectors := a.vectorArena[n : n+len(s.vectors) : n+size]
		copy(vectors, s.vectors)
		s.vectors, s.owned = vectors, true
	}
	return s.vectors
}

// newFree copies amounts into the arena. Free amounts are never written
// once made, so vectors may share them with the View.
func (a *Allocation) newFree(amounts []int64) []int64 {
	if cap(a.arena)-len(a.arena) < len(amounts) {
		a.arena = make([]int64, 0, max(64, len(amounts)))
	}
	n := len(a.arena)
	a.arena = append(a.arena, amounts...)
	return a.arena[n : n+len(amounts) : n+len(amounts)]
}
