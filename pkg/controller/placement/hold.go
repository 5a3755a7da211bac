package placement

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
)

// RebalanceAnnotation on a Placement asks for one cycle that may move its decided clusters as
// OCM's scheduler would (by every prioritizer's score), whatever the hold-still rule says;
// the hub removes the annotation once that cycle's decisions are written.
const RebalanceAnnotation = "fleetfit.io/rebalance"

// Why a cycle may take decided clusters that are still feasible away from a placement.
const (
	// movePlacementChanged: the Placement's spec, or one of its HPAIntents, changed since the
	// last cycle (or an intent is new to it): the cycle is OCM's, in full.
	movePlacementChanged = "PlacementChanged"
	// moveRebalance: the Placement carries RebalanceAnnotation.
	moveRebalance = "Rebalance"
	// moveFollowScores: its prioritizers follow what clusters report (scheduler.Follows) and
	// no decided cluster left it for a scoreRateLimit.
	moveFollowScores = "FollowScores"
	// moveNoLongerFeasible: the cluster no longer passes the placement's filters.
	moveNoLongerFeasible = "NoLongerFeasible"
	// moveUnschedulable: an HPAIntent of the placement moved away from the cluster because its
	// pods stayed unschedulable there (status.moves), and the cluster is in its back-off.
	moveUnschedulable = "Unschedulable"
	// moveConstraints: a pinned cycle selected fewer of the decided clusters than it held
	// (spread constraints).
	moveConstraints = "Constraints"
)

// The hold-still rule. What one cycle decides is OCM's: filters, prioritizers, numberOfClusters,
// spread, decision groups. What changes is what may take a decided cluster away. A decided
// cluster leaves a placement only for a cause its user can name:
//   - it no longer passes the placement's filters (its labels, claims, taints, cluster sets,
//     or the hardware its intents require: see HardwareFit for what is checked on a decided
//     cluster; a silent agent is not a cause); this includes a cluster one of its intents
//     moved away from because the pods stayed unschedulable there (status.moves, in back-off);
//   - the user changed the placement or one of its intents (a new generation, or an intent
//     new to it): the next cycle ranks every cluster as OCM does;
//   - the user asked for it (RebalanceAnnotation);
//   - the placement follows its scores (scheduler.Follows: its resource or add-on
//     prioritizers outweigh Steady, OCM's story 3), and no decided cluster left it for its
//     scoreRateLimit (one minute by default; the hub's start counts as one).
//
// Otherwise the cycle pins the decided clusters (framework.Request.Pinned): they stay while
// they are feasible, whatever their scores, and only unscheduled slots are filled by rank.
// Neither a heartbeat, nor another placement's decisions (Balance), nor room appearing
// elsewhere moves them.

// holdStill is HoldStill for the controller's next cycle of p, with the time of its last move.
func (c *Controller) holdStill(p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent, decided []string,
	now time.Time) (pinned []string, why string, wait time.Duration) {
	var lastMove *time.Time
	if v, ok := c.moves.Load(p.Namespace + "/" + p.Name); ok {
		t := v.(time.Time)
		lastMove = &t
	}
	return HoldStill(c.scheduler, p, intents, decided, lastMove, now)
}

// HoldStill returns the decided clusters the next cycle of p must keep while they are
// feasible (nil: none), and, when it pins none, why the cycle may move them (empty when p
// decides nothing). lastMove is when a decided cluster last left p (nil: not known, as after a
// restart before the controller records one, or in a simulation). wait is how long until a
// placement that follows its scores may move again (0 when it may now, or does not follow).
// The controller, its explain endpoint and `fleetfit simulate` and `explain` all pin with it.
func HoldStill(sched *scheduler.Scheduler, p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent, decided []string,
	lastMove *time.Time, now time.Time) (pinned []string, why string, wait time.Duration) {
	if len(decided) == 0 {
		return nil, "", 0
	}
	if changedSinceScheduled(p, intents) {
		return nil, movePlacementChanged, 0
	}
	if p.Annotations[RebalanceAnnotation] != "" {
		return nil, moveRebalance, 0
	}
	if sched.Follows(p) {
		limit, _ := ScoreRateLimit(p)
		if lastMove == nil {
			return nil, moveFollowScores, 0
		}
		if wait = lastMove.Add(limit).Sub(now); wait <= 0 {
			return nil, moveFollowScores, 0
		}
	}
	return decided, "", wait
}

// changedSinceScheduled reports whether the placement or one of its intents changed since the
// last cycle that scheduled them: the placement's PlacementSatisfied condition and each
// intent's Scheduled condition record the generation that cycle saw, and an intent that has
// not shaped this placement yet is new to it. A condition written before generations were
// recorded (observedGeneration 0) says nothing, and counts as unchanged: an upgrade of the
// hub moves nothing.
func changedSinceScheduled(p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent) bool {
	if cond := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied); cond != nil &&
		cond.ObservedGeneration != 0 && cond.ObservedGeneration != p.Generation {
		return true
	}
	for _, in := range intents {
		if in.Status.ScheduledPlacement != p.Name {
			return true
		}
		cond := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionScheduled)
		if cond == nil || cond.ObservedGeneration != in.Generation {
			return true
		}
	}
	return false
}

// recordRemovals notes the decided clusters a cycle takes away from p (in before, not in
// after): the time, for the rate at which p may follow its scores, a metric by reason, and an
// event that names them with the reason. why is holdStill's answer for the cycle.
func (c *Controller) recordRemovals(p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent, res *scheduler.Result,
	before []string, after []scheduler.Decision, why string, now time.Time) {
	kept := sets.New[string]()
	for _, d := range after {
		kept.Insert(d.ClusterName)
	}
	byReason := map[string][]string{}
	for _, name := range before {
		if kept.Has(name) {
			continue
		}
		reason := why
		if !res.FeasibleCluster(name) {
			reason = moveNoLongerFeasible
			for _, in := range intents {
				if _, ok := in.Status.BackedOff(name, now); ok {
					reason = moveUnschedulable
				}
			}
		} else if reason == "" {
			reason = moveConstraints
		}
		byReason[reason] = append(byReason[reason], name)
	}
	if len(byReason) == 0 {
		return
	}
	c.moves.Store(p.Namespace+"/"+p.Name, now)
	for _, reason := range slices.Sorted(func(yield func(string) bool) {
		for r := range byReason {
			if !yield(r) {
				return
			}
		}
	}) {
		names := byReason[reason]
		c.opts.Metrics.decidedRemovals.WithLabelValues(reason).Add(float64(len(names)))
		listed := names[:min(len(names), maxListed)]
		more := ""
		if len(names) > maxListed {
			more = fmt.Sprintf(" and %d more", len(names)-maxListed)
		}
		c.recorder.Eventf(p, nil, corev1.EventTypeNormal, "DecidedClustersRemoved", reason,
			"%s left the decisions of placement %s: %s", strings.Join(listed, ", ")+more, p.Name, removalMessage(reason))
	}
}

func removalMessage(reason string) string {
	switch reason {
	case moveNoLongerFeasible:
		return "no longer feasible (see explain for the filter that rejects it)"
	case moveUnschedulable:
		return "the workload's pods stayed unschedulable there, so its HPAIntent moves away from it (see the intent's status.moves)"
	case movePlacementChanged:
		return "the placement or one of its HPAIntents changed, and the new cycle ranked other clusters higher"
	case moveRebalance:
		return "a rebalance was asked for with the " + RebalanceAnnotation + " annotation"
	case moveFollowScores:
		return "the placement follows its resource or add-on scores (its prioritizers outweigh Steady), and other clusters now score higher"
	}
	return "the placement's spread constraints left no room for it"
}

// rebalanced removes RebalanceAnnotation from a placement whose rebalance cycle has written its
// decisions. An error is logged and the annotation stays: the next cycle rebalances again,
// which is what it asks for.
func (c *Controller) rebalanced(ctx context.Context, p *clusterv1beta1.Placement) {
	if p.Annotations[RebalanceAnnotation] == "" {
		return
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{RebalanceAnnotation: nil}}})
	if _, err := c.client.ClusterV1beta1().Placements(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		klog.FromContext(ctx).Error(err, "Removing the rebalance annotation", "annotation", RebalanceAnnotation)
	}
}
