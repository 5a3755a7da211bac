package v1alpha1

import (
	"time"
)

// Moves reports whether the hub may move the intent's workload away from a
// cluster where its pods stay unschedulable.
func (r *Rescheduling) Moves() bool {
	return r == nil || r.Policy != ReschedulingNever
}

// After is how long pods must have been unschedulable before a move.
func (r *Rescheduling) After() time.Duration {
	if r == nil || r.UnschedulableFor == nil || r.UnschedulableFor.Duration <= 0 {
		return DefaultUnschedulableFor
	}
	return r.UnschedulableFor.Duration
}

// MovesPerHour bounds the moves of the intent in any hour.
func (r *Rescheduling) MovesPerHour() int {
	if r == nil || r.MaxMovesPerHour == nil || *r.MaxMovesPerHour <= 0 {
		return DefaultMaxMovesPerHour
	}
	return int(*r.MaxMovesPerHour)
}

// MaxMoves is how many moves an intent's status keeps.
const MaxMoves = 20

// LastMoveFrom returns the latest move away from the cluster, nil when there
// is none in the kept history.
func (s *HPAIntentStatus) LastMoveFrom(cluster string) *ClusterMove {
	for i := len(s.Moves) - 1; i >= 0; i-- {
		if s.Moves[i].From == cluster {
			return &s.Moves[i]
		}
	}
	return nil
}

// BackedOff reports whether the cluster is in a back-off for the intent at
// now, with the move that started it.
func (s *HPAIntentStatus) BackedOff(cluster string, now time.Time) (*ClusterMove, bool) {
	m := s.LastMoveFrom(cluster)
	if m == nil || !now.Before(m.BackoffUntil.Time) {
		return nil, false
	}
	return m, true
}

// MovesSince counts the moves decided at or after t.
func (s *HPAIntentStatus) MovesSince(t time.Time) int {
	n := 0
	for i := range s.Moves {
		if !s.Moves[i].Time.Time.Before(t) {
			n++
		}
	}
	return n
}

// MovingFrom returns the moves whose old cluster still keeps its ManifestWork
// (not completed).
func (s *HPAIntentStatus) MovingFrom() []*ClusterMove {
	var out []*ClusterMove
	for i := range s.Moves {
		if s.Moves[i].Completed == nil {
			out = append(out, &s.Moves[i])
		}
	}
	return out
}

// Backoff is how long a cluster is left out for an intent after its
// failures-th move away from it: the intent's unschedulableFor doubled with
// each failure, from 2×, at most a day.
func Backoff(after time.Duration, failures int32) time.Duration {
	d := 2 * after
	for i := int32(1); i < failures && d < 24*time.Hour; i++ {
		d *= 2
	}
	return min(d, 24*time.Hour)
}
