package scheduler

import (
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// ClusterChanged reports whether ev may change the result of t's placement: whether one of
// the plugins it runs — the profile's filters and the placement's own prioritizers — that
// implement framework.EnqueueExtensions answers Queue. A placement whose prioritizer policy
// is misconfigured is not requeued by clusters: only its own change can cure it.
func (s *Scheduler) ClusterChanged(ev framework.ClusterEvent, t *framework.Target) bool {
	asked := make([]framework.EnqueueExtensions, 0, len(s.filters)+2)
	ask := func(p framework.Plugin) bool {
		e, ok := p.(framework.EnqueueExtensions)
		if !ok {
			return false
		}
		for _, a := range asked {
			if a == e {
				return false
			}
		}
		asked = append(asked, e)
		return e.ClusterChanged(ev, t) == framework.Queue
	}
	for _, f := range s.filters {
		if ask(f) {
			return true
		}
	}
	coords, st := s.weights.prioritizerCoordinates(t.Placement)
	if st.IsFailure() {
		return false
	}
	for _, c := range coords {
		if sp, st := s.prioritizer(c); !st.IsFailure() && ask(sp) {
			return true
		}
	}
	return false
}

// Watches reports whether one of the plugins the request's placement runs reads what clusters
// report (framework.EnqueueExtensions.Watches).
func (s *Scheduler) Watches(req *framework.Request) bool {
	for _, f := range s.filters {
		if e, ok := f.(framework.EnqueueExtensions); ok && e.Watches(req) {
			return true
		}
	}
	coords, st := s.weights.prioritizerCoordinates(req.Placement)
	if st.IsFailure() {
		return false
	}
	for _, c := range coords {
		if sp, st := s.prioritizer(c); !st.IsFailure() {
			if e, ok := sp.(framework.EnqueueExtensions); ok && e.Watches(req) {
				return true
			}
		}
	}
	return false
}

// Follows reports whether a placement's decided clusters may move for scores alone: its
// prioritizers that read what clusters report (framework.MoveFollows: free resources, add-on
// scores) can outweigh those that hold its decided clusters (framework.MoveHolds: Steady), or
// nothing holds them (Steady's weight is 0). A reported-state prioritizer of weight w can move
// a cluster's total by 2·|w|·100 (its scores run from -100 to 100), Steady of weight w by w·100:
// OCM's story 3 (ResourceRatioCPU and ResourceAllocatableMemory of weight 2 beside the default
// Steady of 1) follows, its story 4 (ResourceAllocatableCPU of 1, Steady of 3) is pinned, and
// the default policy (Balance 1, Steady 1) is pinned. A misconfigured policy does not follow.
func (s *Scheduler) Follows(p *clusterv1beta1.Placement) bool {
	coords, st := s.weights.prioritizerCoordinates(p)
	if st.IsFailure() {
		return false
	}
	var follow, hold int64
	for _, c := range coords {
		sp, st := s.prioritizer(c)
		if st.IsFailure() {
			return false
		}
		mp, ok := sp.(framework.MovePolicy)
		if !ok {
			continue
		}
		w := int64(c.weight)
		switch mp.MoveRole() {
		case framework.MoveFollows:
			follow += 2 * max(w, -w)
		case framework.MoveHolds:
			hold += w
		}
	}
	return hold <= 0 || follow > hold
}
