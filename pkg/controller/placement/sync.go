package placement

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

// defaultScoreRateLimit applies when a Placement's scoreRateLimit is empty (the CRD defaults
// it to the same value).
const defaultScoreRateLimit = time.Minute

// sync runs one scheduling cycle of the placement with this key and writes what it decides.
// It returns an error only for what a retry may cure (API errors, a plugin's error); a
// placement that must wait (for its intents' verdict, for its intents to arrive) is requeued
// or waits for the event that will requeue it, and nil is returned.
func (c *Controller) sync(ctx context.Context, key string) error {
	p, err := c.placementToSchedule(key)
	if p == nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("placement", klog.KObj(p))
	ctx = klog.NewContext(ctx, logger)

	intents := c.withWrittenScheduledPlacement(c.intentsFor(p))
	if !c.intentsAllowScheduling(ctx, p, intents) {
		return nil
	}
	existing, err := c.existingDecisions(p)
	if err != nil {
		return err
	}
	existingNames, decided := decidedClusters(existing)
	if wait := c.settleWait(key, len(intents) > 0 || decided); wait > 0 {
		c.queue.AddAfter(key, wait)
		return nil
	}

	var ticket uint64
	if len(intents) > 0 {
		// Cycles commit in the order they start (see commitOrder). A cycle that reserves
		// ends its turn as soon as it has reserved; any other keeps it until it returns.
		ticket = c.commits.begin()
		defer c.commits.end(ticket)
	}
	now := c.opts.Clock.Now()
	before := flatten(existingNames)
	pinned, why, followWait := c.holdStill(p, intents, before, now)
	start := time.Now()
	plan, err := c.scheduleCycle(ctx, p, intents, existingNames, pinned, why, ticket)
	if err != nil {
		return err
	}
	c.opts.Metrics.observeCycle(plan.Result, time.Since(start))
	if plan.Kept {
		if plan.Failure.Code() == framework.Misconfigured {
			// The intents say why they are not scheduled (their Scheduled condition).
			if err := c.updateIntents(ctx, intents, plan.Intents); err != nil {
				return errors.Join(err, c.keepDecisions(ctx, p, plan.Failure))
			}
		}
		return c.keepDecisions(ctx, p, plan.Failure)
	}
	if len(intents) > 0 {
		// The intents' status (their reservations) is written before the decisions, so that a
		// decision never exists without a reservation that a restarted hub can read back.
		if err := c.updateIntents(ctx, intents, plan.Intents); err != nil {
			c.cache.Forget(key)
			return err
		}
	}
	if err := c.writeDecisions(ctx, key, p, plan, existing, existingNames); err != nil {
		// Snapshots count what the informer shows until a retry decides again.
		c.cache.Forget(key)
		return err
	}
	c.recordRemovals(p, intents, plan.Result, before, plan.Result.Decisions(), why, now)
	c.released(plan, before, len(intents))
	if why == moveRebalance {
		c.rebalanced(ctx, p)
	}
	if followWait > 0 {
		// It follows its scores but moved less than a scoreRateLimit ago: it looks again
		// when it may move.
		c.queue.AddAfter(key, followWait)
	}
	return nil
}

// flatten returns the cluster names of every decision, sorted and without repeats.
func flatten(names map[string][]string) []string {
	all := sets.New[string]()
	for _, ns := range names {
		all.Insert(ns...)
	}
	return sets.List(all)
}

// placementToSchedule returns the placement with this key when fleetfit is to schedule it,
// or nil: the key is not one of ours, the placement is gone or being deleted, or it is left
// to OCM. The error is the lister's, nil when the placement is simply not found.
func (c *Controller) placementToSchedule(key string) (*clusterv1beta1.Placement, error) {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, nil // not a key we produce; nothing to retry
	}
	p, err := c.placements.Placements(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.scoreWrites.Delete(key)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !p.DeletionTimestamp.IsZero() || !c.Handles(p) {
		return nil, nil
	}
	return p, nil
}

// intentsAllowScheduling reports whether p may be scheduled with these intents: all of
// them must be judged valid. A broken intent stops scheduling, and the decisions stay as
// they are: better the last good placement than one computed without the intent's
// requirements. An intent not judged yet makes p wait; its validation requeues p.
func (c *Controller) intentsAllowScheduling(ctx context.Context, p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent) bool {
	for _, in := range intents {
		valid, known := hpa.IsValid(in)
		if !known {
			klog.FromContext(ctx).V(logs.Changes).Info("Waiting for the HPAIntent to be validated", "hpaIntent", klog.KObj(in))
			return false
		}
		if !valid && hpa.Incomplete(in) {
			// An intent being built, step by step: no fault, but not one to schedule with yet.
			c.recorder.Eventf(p, in, corev1.EventTypeNormal, "HPAIntentIncomplete", "Schedule",
				"HPAIntent %s is incomplete, so the placement is not rescheduled and keeps its decisions until it is complete; see the intent's Valid condition", in.Name)
			return false
		}
		if !valid {
			c.recorder.Eventf(p, in, corev1.EventTypeWarning, "HPAIntentInvalid", "Schedule",
				"HPAIntent %s is invalid, so the placement is not rescheduled and keeps its decisions; see the intent's Valid condition", in.Name)
			return false
		}
	}
	return true
}

// decidedClusters returns the cluster names of each existing decision, by decision name,
// and whether any decision names a cluster.
func decidedClusters(existing map[string]*clusterv1beta1.PlacementDecision) (map[string][]string, bool) {
	names := make(map[string][]string, len(existing))
	decided := false
	for n, d := range existing {
		names[n] = decisionClusterNames(d.Status.Decisions)
		decided = decided || len(names[n]) > 0
	}
	return names, decided
}

// scheduleCycle runs the scheduling cycle of p, keeping the pinned clusters while they are
// feasible (see holdStill), and returns its plan.
//
// Placements with intents take capacity: between the snapshot a cycle reads and recording
// what its result reserves, no other placement may reserve, or two cycles could count the
// same free nodes. The cycle runs without the lock (a CEL predicate or a large fleet may
// take a while); then, in its turn (ticket), the result is reserved only if no reservation
// changed since its snapshot (see reserveIfCurrent), and otherwise the cycle runs again on
// a newer snapshot. Once reserved, the turn is ended and plan.Intents carry the
// reservations to persist.
//
// Without intents, or when the cycle keeps the decisions, the plan is returned as computed:
// nothing is reserved and no lock is taken. The error is ctx's, when it ends before a
// result could be reserved; reserveMu is never held when scheduleCycle returns.
func (c *Controller) scheduleCycle(ctx context.Context, p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent,
	existingNames map[string][]string, pinned []string, why string, ticket uint64) (*Plan, error) {
	for {
		snap, epoch := c.cache.SnapshotAt()
		now := c.opts.Clock.Now()
		// With intents, rejections are recorded: the intents' Scheduled condition says why.
		plan := PlanCycle(ctx, PlanInput{Scheduler: c.scheduler, Snapshot: snap, Placement: p, Intents: intents, Existing: existingNames,
			Pinned: pinned, Why: why, Now: now})
		if plan.Kept {
			return plan, nil
		}
		if len(intents) == 0 {
			c.cache.Assume(p.Namespace+"/"+p.Name, decisionNames(plan.Result.Decisions()))
			return plan, nil
		}
		c.commits.wait(ticket)
		before := snap.DecidedNames(p.Namespace + "/" + p.Name)
		// The planned intents carry the cycle's shares, which split intents reserve.
		if c.reserveIfCurrent(epoch, p, plan.Intents, before, plan.Result.Decisions(), now) {
			c.commits.end(ticket)
			for i, in := range intents {
				plan.Intents[i].Status.Reservations = persistedReservations(in, snap, before, plan.Result.Decisions(), now, c.reservationTimeout())
			}
			return plan, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// reserveIfCurrent reserves, for the intents, the clusters a cycle decided (after, where the
// placement decided before) when no reservation has changed since the snapshot of reservation
// epoch epoch that the cycle read, and reports whether it did. It holds reserveMu only while
// it checks and reserves. The reservations are made before any write, so that a failed write
// is retried and reserves the same again.
func (c *Controller) reserveIfCurrent(epoch uint64, p *clusterv1beta1.Placement, intents []*fleetfitv1alpha1.HPAIntent,
	before []string, after []scheduler.Decision, now time.Time) bool {
	c.reserveMu.Lock()
	defer c.reserveMu.Unlock()
	if c.cache.ReservationEpoch() != epoch {
		return false
	}
	c.reserve(p, intents, before, after, now)
	c.cache.Assume(p.Namespace+"/"+p.Name, decisionNames(after))
	return true
}

func decisionNames(ds []scheduler.Decision) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ClusterName
	}
	return out
}

// writeDecisions writes what a cycle decided: the PlacementDecisions, then the placement's
// status, and requeues the placement when a plugin or the score write limit asks for it. It
// returns the first API error, for a retry.
func (c *Controller) writeDecisions(ctx context.Context, key string, p *clusterv1beta1.Placement, plan *Plan,
	existing map[string]*clusterv1beta1.PlacementDecision, existingNames map[string][]string) error {
	res := plan.Result
	desired := plan.desired
	requeue := res.RequeueAfter
	if wait := c.limitScoreWrites(key, p, desired, existing); wait > 0 && (requeue == 0 || wait < requeue) {
		requeue = wait
	}

	bindStart := time.Now()
	if err := c.bind(ctx, p, desired, existing, existingNames); err != nil {
		return err
	}
	c.opts.Metrics.bindDuration.Observe(time.Since(bindStart).Seconds())

	if err := c.updateStatus(ctx, p, plan.Status); err != nil {
		return err
	}
	if res.Status.Code() == framework.Warning {
		c.recorder.Eventf(p, nil, corev1.EventTypeWarning, "SchedulingWarning", "Schedule", "%s: %s", res.Status.Plugin(), res.Status.Message())
	}
	if requeue > 0 {
		klog.FromContext(ctx).V(logs.Debug).Info("Requeue placement", "after", requeue)
		c.queue.AddAfter(key, requeue)
	}
	return nil
}

// intentSettle is how long a Placement that has just been created, and has neither intents
// nor decisions yet, waits for its first cycle. A Placement and its HPAIntent are usually
// created together (kubectl apply -f), in either order, and reach the hub through different
// watches: scheduled before its intent shows up, the Placement would be decided for a moment
// as a plain one, on clusters that may not have what the intent needs.
const intentSettle = time.Second

// settleWait returns how long the first cycle of a just created Placement should still wait
// for its intents (see intentSettle); shaped says whether it has intents or decisions already.
func (c *Controller) settleWait(key string, shaped bool) time.Duration {
	v, ok := c.firstSeen.Load(key)
	if !ok {
		return 0
	}
	if shaped {
		c.firstSeen.Delete(key)
		return 0
	}
	wait := v.(time.Time).Add(intentSettle).Sub(c.opts.Clock.Now())
	if wait <= 0 {
		c.firstSeen.Delete(key)
	}
	return max(wait, 0)
}

// keepDecisions handles a cycle that could not finish. Unlike OCM, the existing decisions are
// left exactly as they are: a typo in a Placement or a transient plugin error must not
// undeploy workloads. A misconfiguration becomes a condition and an event and is not retried
// (the Placement's next change triggers a new cycle); an error is retried with backoff.
func (c *Controller) keepDecisions(ctx context.Context, p *clusterv1beta1.Placement, st *framework.Status) error {
	status := keptStatus(p, st)
	if st.Code() == framework.Misconfigured {
		c.recorder.Eventf(p, nil, corev1.EventTypeWarning, "Misconfigured", "Schedule", "%s (existing decisions are kept)", conditionMessage(st))
		return c.updateStatus(ctx, p, status)
	}
	if err := c.updateStatus(ctx, p, status); err != nil {
		return errors.Join(st.AsError(), err)
	}
	return st.AsError()
}

// keptStatus is the Placement status after a cycle that failed with st: the decisions and
// their counts stay, and a condition says what went wrong.
func keptStatus(p *clusterv1beta1.Placement, st *framework.Status) clusterv1beta1.PlacementStatus {
	status := p.Status.DeepCopy()
	if st.Code() == framework.Misconfigured {
		meta.SetStatusCondition(&status.Conditions, misconfiguredCondition(st))
		return *status
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type:    clusterv1beta1.PlacementConditionSatisfied,
		Status:  metav1.ConditionFalse,
		Reason:  "NotAllDecisionsScheduled",
		Message: conditionMessage(st) + " (existing decisions are kept)",
	})
	return *status
}

// conditionMessage is OCM's "<plugin>:<message>", bounded: a message may quote user input
// such as a CEL expression. A problem no plugin reported (the decision groups, say) is its
// message alone, not ":message".
func conditionMessage(st *framework.Status) string {
	if st.Plugin() == "" {
		return textcap.Truncate(st.Message(), textcap.MaxMessage)
	}
	return textcap.Truncate(fmt.Sprintf("%s:%s", st.Plugin(), st.Message()), textcap.MaxMessage)
}
