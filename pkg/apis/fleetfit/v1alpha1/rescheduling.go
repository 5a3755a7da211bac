package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReschedulingPolicy says whether the hub moves an intent's workload away from
// a cluster where its pods stay unschedulable.
// +kubebuilder:validation:Enum=IfUnschedulable;Never
type ReschedulingPolicy string

const (
	// ReschedulingIfUnschedulable moves the workload to another cluster when
	// some of its pods have been unschedulable on a decided cluster for
	// unschedulableFor, and another cluster can take it.
	ReschedulingIfUnschedulable ReschedulingPolicy = "IfUnschedulable"
	// ReschedulingNever leaves the workload where it is; the intent only
	// says that pods wait.
	ReschedulingNever ReschedulingPolicy = "Never"
)

// Defaults of Rescheduling.
const (
	// DefaultUnschedulableFor is how long pods wait unschedulable before the
	// hub moves their workload: long enough for a cluster autoscaler or a
	// finishing job to make room, as Karmada's descheduler waits.
	DefaultUnschedulableFor = 5 * time.Minute
	// DefaultMaxMovesPerHour bounds the moves of one intent in any hour.
	DefaultMaxMovesPerHour = 2
)

// Rescheduling is the intent's rescheduling policy.
// +kubebuilder:validation:XValidation:rule="!has(self.unschedulableFor) || (duration(self.unschedulableFor) >= duration('30s') && duration(self.unschedulableFor) <= duration('24h'))",message="unschedulableFor must be between 30s and 24h: pods wait a little while a node starts or a job ends, so a shorter time moves workloads that would have run (5m when left out)"
type Rescheduling struct {
	// policy: IfUnschedulable (the default) or Never.
	// +optional
	Policy ReschedulingPolicy `json:"policy,omitempty"`
	// unschedulableFor is how long some of the pods must have been
	// unschedulable on a cluster before the workload moves; 5m when left out,
	// at least 30s.
	// +optional
	UnschedulableFor *metav1.Duration `json:"unschedulableFor,omitempty"`
	// maxMovesPerHour bounds how many times the workload moves in any hour;
	// 2 when left out.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	MaxMovesPerHour *int32 `json:"maxMovesPerHour,omitempty"`
}

// ClusterMove is one move of an intent's workload away from a cluster.
type ClusterMove struct {
	// from is the cluster the workload left.
	// +kubebuilder:validation:MaxLength=253
	From string `json:"from"`
	// time is when the hub decided to move.
	Time metav1.Time `json:"time"`
	// reason is what the cluster's agent reported: how many pods waited, for
	// how long, and kube-scheduler's message.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Reason string `json:"reason,omitempty"`
	// failures counts the moves away from this cluster in the kept history,
	// this one included; the back-off doubles with each.
	Failures int32 `json:"failures"`
	// backoffUntil: the cluster is not chosen again for this intent before.
	BackoffUntil metav1.Time `json:"backoffUntil"`
	// completed is when the workload left the cluster: its ManifestWork there
	// was removed once the replacement was available (or at once when none
	// of it ran there). Until then the old cluster keeps its ManifestWork.
	// +optional
	Completed *metav1.Time `json:"completed,omitempty"`
}

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
