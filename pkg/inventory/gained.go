package inventory

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Gained reports whether v, a cluster's new report, may fit some request that old, its
// previous report, could not: a kind of node old did not have (other labels, taints or pod
// slots), more nodes of a kind with at least some free vector, more free machines of a type,
// or other reported labels. It never answers false when such a request exists, and answers
// true for some changes that admit nothing new (a node that gained memory but lost cpu), so
// that a caller may skip the exact fit check of every waiting request when it is false: room
// that only shrank, or a report that only moved its observedAt, admits nothing. A nil old
// gained everything; a nil v nothing.
//
// The test is by dominance, shape by shape: for every free vector f of a schedulable node
// kind in v, the nodes of that kind with at least f free must not outnumber those in old.
// Whatever a request needs of one node, the nodes that can give it are those with a free
// vector at least that large, so no request fits more replicas on v than on old unless such
// a count grew.
func (v *View) Gained(old *View) bool {
	switch {
	case v == nil:
		return false
	case old == nil:
		return true
	}
	if !slices.Equal(v.reported.prefixes, old.reported.prefixes) || !maps.Equal(v.reported.keys, old.reported.keys) {
		return true
	}
	for i := range v.shapes {
		s := &v.shapes[i]
		if !s.schedulable || len(s.vectors) == 0 {
			continue
		}
		if s.truncated {
			return true // a partial summary: no telling what it left out
		}
		// Nodes of one kind may fall in several shapes (other allocatable amounts): on both
		// sides, the nodes with at least f free are counted over every shape of the kind.
		kin, own := old.sameKind(s), v.sameKind(s)
		for k := range s.vectors {
			f := &s.vectors[k]
			if kindAtLeast(own, s, f) > kindAtLeast(kin, s, f) {
				return true
			}
		}
	}
	for _, m := range v.machines {
		if m.free > old.freeMachines(m.MachineType) {
			return true
		}
	}
	return v.poolsGained(old)
}

// sameKind returns the schedulable shapes of v whose nodes are of s's kind: the same labels,
// taints and pod slots.
func (v *View) sameKind(s *viewShape) []*viewShape {
	var out []*viewShape
	for i := range v.shapes {
		o := &v.shapes[i]
		if o.schedulable && o.podSlots == s.podSlots && maps.Equal(o.labels, s.labels) &&
			slices.EqualFunc(o.taints, s.taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) && a.Value == b.Value }) {
			out = append(out, o)
		}
	}
	return out
}

// atLeast counts the nodes of s whose free vector is at least f, a vector of shape of.
func (s *viewShape) atLeast(f *viewVector, of *viewShape) int64 {
	var n int64
	for k := range s.vectors {
		if dominates(s, &s.vectors[k], of, f) {
			n += s.vectors[k].count
		}
	}
	return n
}

// kindAtLeast counts the nodes of the shapes kin (one kind) whose free vector is at least f,
// a vector of shape of.
func kindAtLeast(kin []*viewShape, of *viewShape, f *viewVector) int64 {
	var n int64
	for _, o := range kin {
		n += o.atLeast(f, of)
	}
	return n
}

// dominates reports whether a (a vector of shape as) has at least as much of every resource
// as b (a vector of shape bs); a resource a shape does not list is none.
func dominates(as *viewShape, a *viewVector, bs *viewShape, b *viewVector) bool {
	for j, name := range bs.names {
		if b.free[j] <= 0 {
			continue
		}
		i, ok := slices.BinarySearch(as.names, name)
		if !ok || a.free[i] < b.free[j] {
			return false
		}
	}
	return true
}

// freeMachines returns the free machines v reports of a type (0 when it reports none).
func (v *View) freeMachines(m MachineType) int64 {
	for _, vm := range v.machines {
		if vm.MachineType == m {
			return vm.free
		}
	}
	return 0
}

// poolsGained reports whether v's pools can add a node of a shape that old's
// could not add as many of: a pool that became ready, a new shape, or limits
// that grew.
func (v *View) poolsGained(old *View) bool {
	room := func(w *View) map[string]int64 {
		out := map[string]int64{}
		for j := range w.poolShapes {
			out[w.poolShapes[j].name] = w.poolRoom(j)
		}
		return out
	}
	before := room(old)
	for name, n := range room(v) {
		if n > before[name] {
			return true
		}
	}
	return false
}
