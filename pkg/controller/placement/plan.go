package placement

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// PlanInput is what one scheduling cycle of a placement reads.
type PlanInput struct {
	Scheduler *scheduler.Scheduler
	Snapshot  *framework.Snapshot
	Placement *clusterv1beta1.Placement
	// Intents are the placement's valid HPAIntents, by name.
	Intents []*fleetfitv1alpha1.HPAIntent
	// Existing are the placement's PlacementDecisions by name; their slots are kept.
	Existing map[string][]string
	Now      time.Time
	// Explain records every filter's rejections and every prioritizer's scores.
	Explain bool
	// Pinned are the decided clusters the cycle keeps while they stay feasible (see
	// holdStill); nil pins none.
	Pinned []string
	// Why is HoldStill's reason when it pins none: a placement that follows its scores moves
	// only to clusters that score clearly better (framework.Request.Sticky).
	Why string
}

// Plan is what one scheduling cycle of a placement would write, computed without writing: the
// controller's dry run, the explain endpoint and `fleetfit simulate` all read it, and the
// controller writes the same pieces.
type Plan struct {
	Result *scheduler.Result
	// Kept is set when the cycle failed (a misconfiguration or an error): the existing
	// decisions stay as they are and Status says why; Failure is what failed.
	Kept    bool
	Failure *framework.Status
	// Decisions are the PlacementDecisions as they would be written, in name order.
	Decisions []clusterv1beta1.PlacementDecision
	Status    clusterv1beta1.PlacementStatus
	// Intents are copies of the input intents carrying the status the cycle gives them.
	Intents []*fleetfitv1alpha1.HPAIntent

	desired []desiredDecision
}

// PlanCycle runs one scheduling cycle of in.Placement and lays out its result.
func PlanCycle(ctx context.Context, in PlanInput) *Plan {
	p := in.Placement
	key := p.Namespace + "/" + p.Name
	req := &framework.Request{Placement: p, Intents: in.Intents, Decided: in.Snapshot.BitsetOf(in.Snapshot.DecidedNames(key)), Now: in.Now}
	req.Sticky = in.Pinned == nil && in.Why == moveFollowScores
	if in.Pinned != nil {
		req.Pinned = in.Snapshot.BitsetOf(in.Pinned)
	}
	opts := scheduler.Options{Explain: in.Explain}
	if !in.Explain && len(in.Intents) > 0 {
		// The intents' Scheduled condition names a few rejected clusters with their reasons.
		opts.Explain, opts.MaxReasons = true, maxListed
	}
	res := in.Scheduler.Schedule(ctx, in.Snapshot, req, opts)
	plan := &Plan{Result: res}
	st := res.Status
	if _, err := ScoreRateLimit(p); err != nil && !st.IsFailure() {
		st = framework.Misconfiguredf("%v", err).WithPlugin("Placement")
	}
	var groups []decisionGroup
	if !res.Failed() && !st.IsFailure() {
		groups, st = groupDecisions(p, in.Snapshot, res.Decisions())
	}
	if st.IsFailure() {
		plan.Kept, plan.Failure = true, st
		plan.Status = keptStatus(p, st)
		for _, in := range in.Intents {
			out := in.DeepCopy()
			if st.Code() == framework.Misconfigured {
				// The placement's own condition says what is wrong; so does each intent's,
				// which is where its author looks.
				meta.SetStatusCondition(&out.Status.Conditions, misconfiguredIntentCondition(in, p, st))
			}
			plan.Intents = append(plan.Intents, out)
		}
		return plan
	}
	plan.desired = layoutDecisions(p.Name, p.Spec.SortBy, groups, in.Existing)
	for _, d := range plan.desired {
		plan.Decisions = append(plan.Decisions, d.object(p))
	}
	plan.Status = statusFor(p, res, plan.desired)
	for _, intent := range in.Intents {
		status, _ := intentStatus(intent, p, req, res)
		out := intent.DeepCopy()
		out.Status = *status.DeepCopy()
		plan.Intents = append(plan.Intents, out)
	}
	return plan
}

// labels are OCM's labels of a PlacementDecision.
func (d desiredDecision) labels(placement string) map[string]string {
	return map[string]string{
		clusterv1beta1.PlacementLabel:          placement,
		clusterv1beta1.DecisionGroupNameLabel:  d.groupName,
		clusterv1beta1.DecisionGroupIndexLabel: fmt.Sprint(d.groupIndex),
	}
}

// object is the PlacementDecision as it is written (without the owner reference, which needs
// the stored Placement's UID).
func (d desiredDecision) object(p *clusterv1beta1.Placement) clusterv1beta1.PlacementDecision {
	pd := clusterv1beta1.PlacementDecision{}
	pd.APIVersion, pd.Kind = clusterv1beta1.SchemeGroupVersion.String(), "PlacementDecision"
	pd.Name, pd.Namespace = d.name, p.Namespace
	pd.Labels = d.labels(p.Name)
	pd.Status.Decisions = d.decisions
	if pd.Status.Decisions == nil {
		pd.Status.Decisions = []clusterv1beta1.ClusterDecision{}
	}
	return pd
}

// ScoreRateLimit returns how often a placement's decisions may be rewritten for scores alone
// (spec.scoreRateLimit, one minute when empty), or an error that says how to fix it.
func ScoreRateLimit(p *clusterv1beta1.Placement) (time.Duration, error) {
	if p.Spec.ScoreRateLimit == "" {
		return defaultScoreRateLimit, nil
	}
	d, err := time.ParseDuration(p.Spec.ScoreRateLimit)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("spec.scoreRateLimit %q is not a duration such as 30s or 5m: set one, or remove it for the default of %s", p.Spec.ScoreRateLimit, defaultScoreRateLimit)
	}
	return d, nil
}
