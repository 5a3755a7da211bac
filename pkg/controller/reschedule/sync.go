package reschedule

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/logs"
)

// sync judges the intent with this key and writes the verdict into its status. It returns an
// error only for what a retry may cure (API errors); an intent that must wait is requeued for
// the time its wait ends, or waits for the event that changes it.
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we produce; nothing to retry
	}
	in, err := c.intents.HPAIntents(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("hpaIntent", klog.KObj(in))
	ctx = klog.NewContext(ctx, logger)

	now := c.opts.Clock.Now()
	var v verdict
	var previous *metav1.Condition
	written := false
	// The status is written whole, with the resourceVersion it was read at, so that no field
	// another controller wrote meanwhile is lost: on a conflict the intent is read again and
	// judged anew (a move another hub just wrote is then in progress).
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !in.DeletionTimestamp.IsZero() {
			v, written = verdict{}, false
			return nil
		}
		v = c.judge(ctx, in, now)
		previous = meta.FindStatusCondition(in.Status.Conditions, ConditionRescheduled)
		status := apply(in.Status, v, now)
		if equality.Semantic.DeepEqual(status, &in.Status) {
			written = false
			return nil
		}
		upd := in.DeepCopy()
		upd.Status = *status
		_, err := c.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(ns).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			written = err == nil
			return err
		}
		fresh, getErr := c.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(ns).Get(ctx, name, metav1.GetOptions{})
		if getErr != nil {
			if apierrors.IsNotFound(getErr) {
				return nil
			}
			return getErr
		}
		in = fresh
		return err
	})
	if err != nil {
		return fmt.Errorf("updating status of HPAIntent %s: %w", key, err)
	}
	if written {
		c.record(ctx, in, v, previous)
	}
	if v.requeue > 0 {
		logger.V(logs.Debug).Info("Requeue HPAIntent", "after", v.requeue)
		c.queue.AddAfter(key, v.requeue)
	}
	return nil
}

// judge gathers what the intent's decided clusters report and judges it.
func (c *Controller) judge(ctx context.Context, in *fleetfitv1alpha1.HPAIntent, now time.Time) verdict {
	name := in.Status.ScheduledPlacement
	if name == "" {
		return verdict{clear: true}
	}
	decided, existing := c.decided(in.Namespace, name)
	reports := reported(in, decided, func(cluster string) *fleetfitv1alpha1.ClusterInventory {
		inv, err := c.inventories.ClusterInventories(cluster).Get(cluster)
		if err != nil {
			return nil
		}
		return inv
	})
	return judge(in, reports, now, func(from string, move fleetfitv1alpha1.ClusterMove) ([]string, string) {
		return c.replacement(ctx, in, name, decided, existing, move, now)
	})
}

// decided returns the clusters the placement's PlacementDecisions name, sorted, and the names
// of each decision's clusters by decision name (for the dry run to keep their slots).
func (c *Controller) decided(namespace, name string) ([]string, map[string][]string) {
	objs, _ := c.decisions.PlacementDecisions(namespace).List(labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: name}))
	all := sets.New[string]()
	existing := make(map[string][]string, len(objs))
	for _, d := range objs {
		for _, cd := range d.Status.Decisions {
			all.Insert(cd.ClusterName)
			existing[d.Name] = append(existing[d.Name], cd.ClusterName)
		}
	}
	return sets.List(all), existing
}

// replacement runs the placement's cycle as the placement controller would run it once the
// move is written (the decided clusters pinned while feasible, the intent carrying the move,
// so HardwareFit leaves from out for its back-off), writing nothing, and returns the clusters
// it decides that the placement does not decide now, or why the cycle fails.
func (c *Controller) replacement(ctx context.Context, in *fleetfitv1alpha1.HPAIntent, name string, decided []string,
	existing map[string][]string, move fleetfitv1alpha1.ClusterMove, now time.Time) ([]string, string) {
	p, err := c.placements.Placements(in.Namespace).Get(name)
	if err != nil {
		return nil, fmt.Sprintf("Placement %s: %v", name, err)
	}
	all, _ := c.intents.HPAIntents(in.Namespace).List(labels.Everything())
	intents := slices.Clone(hpa.IntentsOf(in.Namespace, name, all, true))
	for i, other := range intents {
		if valid, known := hpa.IsValid(other); !valid || !known {
			// The placement controller does not schedule the placement until it is.
			return nil, fmt.Sprintf("HPAIntent %s is not valid yet, so Placement %s is not scheduled", other.Name, name)
		}
		if other.UID == in.UID {
			moved := other.DeepCopy()
			moved.Status.Moves = withMove(moved.Status.Moves, move)
			intents[i] = moved
		}
	}
	plan := placement.PlanCycle(ctx, placement.PlanInput{
		Scheduler: c.scheduler, Snapshot: c.cache.Snapshot(), Placement: p, Intents: intents,
		Existing: existing, Now: now, Pinned: decided,
	})
	if plan.Kept {
		return nil, plan.Failure.Message()
	}
	decidedNow := sets.New(decided...)
	var added []string
	for _, d := range plan.Result.Decisions() {
		if !decidedNow.Has(d.ClusterName) {
			added = append(added, d.ClusterName)
		}
	}
	slices.Sort(added)
	return added, ""
}

// apply returns a copy of the status with the verdict applied.
func apply(old fleetfitv1alpha1.HPAIntentStatus, v verdict, now time.Time) *fleetfitv1alpha1.HPAIntentStatus {
	status := old.DeepCopy()
	if v.move != nil {
		status.Moves = withMove(status.Moves, *v.move)
	}
	if v.condition != nil {
		cond := *v.condition
		cond.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(&status.Conditions, cond)
	}
	if v.clear {
		// A wait that is over leaves nothing to say; the condition of the last move stays.
		if cond := meta.FindStatusCondition(status.Conditions, ConditionRescheduled); cond != nil && cond.Status == metav1.ConditionFalse {
			meta.RemoveStatusCondition(&status.Conditions, ConditionRescheduled)
		}
	}
	return status
}

// record tells what a written verdict did: a Warning event and the moves metric for a move;
// for a refusal, the metric and an event once, when the refusal is new (the condition's
// reason changes), not at every look.
func (c *Controller) record(ctx context.Context, in *fleetfitv1alpha1.HPAIntent, v verdict, previous *metav1.Condition) {
	logger := klog.FromContext(ctx)
	if v.move != nil {
		c.opts.Metrics.moves.WithLabelValues(moveUnschedulable).Inc()
		c.clients.Recorder.Eventf(in, nil, corev1.EventTypeWarning, "Rescheduling", "Move", "%s", v.condition.Message)
		logger.V(logs.Changes).Info("Moving the workload away from a cluster where its pods stay unschedulable",
			"cluster", v.move.From, "to", v.to, "failures", v.move.Failures, "backoffUntil", v.move.BackoffUntil)
		return
	}
	if v.condition == nil || (previous != nil && previous.Reason == v.condition.Reason && previous.Status == v.condition.Status) {
		return
	}
	c.opts.Metrics.refused.WithLabelValues(v.condition.Reason).Inc()
	c.clients.Recorder.Eventf(in, nil, corev1.EventTypeWarning, "NotRescheduled", "Move", "%s", v.condition.Message)
	logger.V(logs.Changes).Info("Not moving the workload", "reason", v.condition.Reason, "message", v.condition.Message)
}
