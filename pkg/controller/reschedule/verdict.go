package reschedule

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

// ConditionRescheduled is the intent's condition this controller owns. True (ReasonMoving):
// the workload is moving away from a cluster where its pods stayed unschedulable. False: its
// pods wait unschedulable on a decided cluster and the reason says why nothing moves. Absent:
// no pod of the intent has waited past its threshold.
const ConditionRescheduled = "Rescheduled"

// Reasons of ConditionRescheduled, also the label values of the metrics.
const (
	// ReasonMoving: a move was written to status.moves.
	ReasonMoving = "Moving"
	// ReasonNoReplacement: no other cluster can take the workload, so it stays.
	ReasonNoReplacement = "NoReplacement"
	// ReasonMoveLimit: the intent moved spec.rescheduling.maxMovesPerHour times in the last hour.
	ReasonMoveLimit = "MoveLimit"
	// ReasonNever: spec.rescheduling.policy is Never.
	ReasonNever = "Never"
	// moveUnschedulable is the reason of a move in the moves metric: pods stayed unschedulable.
	moveUnschedulable = "Unschedulable"
)

// maxFailures bounds ClusterMove.Failures: the back-off reaches its day well before.
const maxFailures = 64

// maxMoveReason bounds ClusterMove.Reason, as its CRD does.
const maxMoveReason = 1024

// stuck is what a decided cluster's agent reports of the intent's unschedulable pods.
type stuck struct {
	cluster string
	// grows is set when the cluster has a ready autoscaling pool: its pods may wait for a
	// node it adds.
	grows bool
	fleetfitv1alpha1.UnschedulableWorkload
}

// reported returns, for each decided cluster (sorted) whose inventory reports pods of the
// intent unschedulable, what it reports. The agent names the intent by the label values
// delivery puts on its pods: the name, or for a long one a cut form, which is compared with
// the form delivery computes (v1alpha1.IntentLabelValue), never with the name itself.
func reported(in *fleetfitv1alpha1.HPAIntent, decided []string, inventory func(cluster string) *fleetfitv1alpha1.ClusterInventory) []stuck {
	value := fleetfitv1alpha1.IntentLabelValue(in.Name)
	var out []stuck
	for _, cluster := range decided {
		inv := inventory(cluster)
		if inv == nil {
			continue
		}
		for _, u := range inv.Status.Unschedulable {
			if u.IntentNamespace == in.Namespace && u.IntentName == value {
				out = append(out, stuck{cluster: cluster, grows: grows(inv), UnschedulableWorkload: u})
				break
			}
		}
	}
	return out
}

// replacementFunc runs a dry run of the placement's next cycle with the intent moved away
// from a cluster, and returns the clusters it decides that the placement does not decide now
// (none: nothing can take the workload), or why the cycle failed.
type replacementFunc func(from string, move fleetfitv1alpha1.ClusterMove) (added []string, failure string)

// verdict is what to do for an intent: at most one of move and condition is set, or neither
// when nothing is to be written.
type verdict struct {
	// move is the move to append to status.moves, towards one of to.
	move *fleetfitv1alpha1.ClusterMove
	to   []string
	// condition is ConditionRescheduled to set; clear removes a False one (the wait is over).
	condition *metav1.Condition
	clear     bool
	// requeue is when to look at the intent again (0: when an event says so).
	requeue time.Duration
}

// judge decides what to do for an intent whose placement decides these clusters, with what
// their agents report of its pods. It is a chain of small rules, in order: the policy, the
// threshold, a move in progress, the back-off, the hourly limit, a replacement.
func judge(in *fleetfitv1alpha1.HPAIntent, reports []stuck, now time.Time, replacement replacementFunc) verdict {
	policy := in.Spec.Rescheduling
	var ready []stuck
	var v verdict
	for _, r := range reports {
		if wait := r.Since.Add(threshold(in, r)).Sub(now); wait > 0 {
			v.requeue = earliest(v.requeue, wait)
			continue
		}
		ready = append(ready, r)
	}
	if len(ready) == 0 {
		v.clear = true
		return v
	}
	// The one waiting longest first, then by cluster name: one move at a time.
	slices.SortStableFunc(ready, func(a, b stuck) int {
		return cmp.Or(a.Since.Compare(b.Since.Time), strings.Compare(a.cluster, b.cluster))
	})
	if !policy.Moves() {
		v.condition = condition(in, metav1.ConditionFalse, ReasonNever,
			waitMessage(ready[0], now)+"; they wait there, because rescheduling is off (spec.rescheduling.policy: Never)")
		return v
	}
	if len(in.Status.MovingFrom()) > 0 {
		// The last move has not completed: its completion (status.moves) requeues the intent.
		return v
	}
	var a *stuck
	for i := range ready {
		if _, off := in.Status.BackedOff(ready[i].cluster, now); !off {
			a = &ready[i]
			break
		}
	}
	if a == nil {
		// The placement's next cycle leaves those clusters out (HardwareFit reads the back-off).
		return v
	}
	if limit, moved := policy.MovesPerHour(), in.Status.MovesSince(now.Add(-time.Hour)); moved >= limit {
		next := nextMoveAllowed(in.Status.Moves, limit, now)
		v.condition = condition(in, metav1.ConditionFalse, ReasonMoveLimit, fmt.Sprintf(
			"%s; it does not move yet: it moved %d time(s) in the last hour, at most %d (spec.rescheduling.maxMovesPerHour), and may move again at %s",
			waitMessage(*a, now), moved, limit, next.UTC().Format(time.RFC3339)))
		v.requeue = earliest(v.requeue, next.Sub(now))
		return v
	}
	after := threshold(in, *a)
	failures := int32(1)
	if last := in.Status.LastMoveFrom(a.cluster); last != nil {
		// The back-off stops growing at a day long before the count could wrap.
		failures = min(max(last.Failures, 0), maxFailures-1) + 1
	}
	move := fleetfitv1alpha1.ClusterMove{
		From: a.cluster, Time: metav1.NewTime(now), Failures: failures,
		Reason:       textcap.Truncate(podsMessage(*a, now), maxMoveReason),
		BackoffUntil: metav1.NewTime(now.Add(fleetfitv1alpha1.Backoff(after, failures))),
	}
	to, failure := replacement(a.cluster, move)
	if len(to) == 0 {
		why := "no other cluster can take it, so it stays"
		if failure != "" {
			why += " (the placement's cycle without it fails: " + failure + ")"
		}
		v.condition = condition(in, metav1.ConditionFalse, ReasonNoReplacement, waitMessage(*a, now)+"; "+why)
		// Room elsewhere is not an event this controller follows; it looks again after one
		// threshold, as long as the pods wait.
		v.requeue = earliest(v.requeue, after)
		return v
	}
	v.move, v.to = &move, to
	v.condition = condition(in, metav1.ConditionTrue, ReasonMoving, movingMessage(*a, to, now))
	return v
}

// podsMessage is the move's reason: "3 pods unschedulable for 6m: <kube-scheduler's message>".
func podsMessage(s stuck, now time.Time) string {
	msg := fmt.Sprintf("%d pod(s) unschedulable for %s", s.PodCount, duration.HumanDuration(now.Sub(s.Since.Time)))
	if s.Message != "" {
		msg += ": " + s.Message
	}
	return msg
}

// waitMessage names the cluster and what waits there.
func waitMessage(s stuck, now time.Time) string {
	msg := fmt.Sprintf("%s: %d pod(s) of the workload unschedulable for %s", s.cluster, s.PodCount, duration.HumanDuration(now.Sub(s.Since.Time)))
	if s.Message != "" {
		msg += ": " + s.Message
	}
	return msg
}

// movingMessage is the condition's and the event's message of a move.
func movingMessage(s stuck, to []string, now time.Time) string {
	return fmt.Sprintf("%s; moving to another cluster (%s can take it)", waitMessage(s, now), textcap.Join(to, ", ", 5, 512))
}

func condition(in *fleetfitv1alpha1.HPAIntent, status metav1.ConditionStatus, reason, message string) *metav1.Condition {
	return &metav1.Condition{
		Type: ConditionRescheduled, Status: status, Reason: reason, ObservedGeneration: in.Generation,
		Message: textcap.Truncate(message, textcap.MaxMessage),
	}
}

// nextMoveAllowed is when fewer than limit moves are left in the hour before: the hour after
// the move that, leaving the window, brings the count below limit. moves are oldest first.
func nextMoveAllowed(moves []fleetfitv1alpha1.ClusterMove, limit int, now time.Time) time.Time {
	var recent []time.Time
	for i := range moves {
		if !moves[i].Time.Time.Before(now.Add(-time.Hour)) {
			recent = append(recent, moves[i].Time.Time)
		}
	}
	slices.SortFunc(recent, time.Time.Compare)
	if len(recent) < limit {
		return now
	}
	return recent[len(recent)-limit].Add(time.Hour)
}

// withMove appends a move to the history and drops the oldest completed moves beyond
// fleetfitv1alpha1.MaxMoves (a move in progress is kept; should there be no completed one
// left, the oldest goes).
func withMove(moves []fleetfitv1alpha1.ClusterMove, m fleetfitv1alpha1.ClusterMove) []fleetfitv1alpha1.ClusterMove {
	out := append(slices.Clone(moves), m)
	for len(out) > fleetfitv1alpha1.MaxMoves {
		i := slices.IndexFunc(out, func(m fleetfitv1alpha1.ClusterMove) bool { return m.Completed != nil })
		if i < 0 {
			i = 0
		}
		out = slices.Delete(out, i, i+1)
	}
	return out
}

func earliest(a, b time.Duration) time.Duration {
	if a <= 0 || (b > 0 && b < a) {
		return b
	}
	return a
}

// grows reports whether the inventory shows a ready autoscaling pool.
func grows(inv *fleetfitv1alpha1.ClusterInventory) bool {
	for i := range inv.Status.NodePools {
		if inv.Status.NodePools[i].Ready {
			return true
		}
	}
	return false
}

// threshold is how long the pods reported may wait unschedulable before they move:
// rescheduling's unschedulableFor, or on a cluster that can grow, the intent's scale-up
// maxWait when longer, since the pods wait there while the cluster adds a node for them.
func threshold(in *fleetfitv1alpha1.HPAIntent, r stuck) time.Duration {
	after := in.Spec.Rescheduling.After()
	if r.grows && in.Spec.ScaleUp.Allows() {
		after = max(after, in.Spec.ScaleUp.Wait())
	}
	return after
}
