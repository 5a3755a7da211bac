package simulate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	clusterlisterv1alpha1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1alpha1"
	clusterlisterv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/hpaintent"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
)

// Options tune a simulation.
type Options struct {
	// Now is the time the fleet is scheduled at (inventory freshness, score validity,
	// toleration expiry).
	Now time.Time
	// Mode says which Placements the hub would schedule (default placementmode.All).
	Mode placementmode.Mode
	// Only, when not empty, schedules only these placements ("namespace/name"); the others
	// keep the decisions the fleet holds.
	Only []string
}

// Result is the outcome of a simulation.
type Result struct {
	Now        time.Time
	Placements []PlacementResult
	// Intents are every HPAIntent of the fleet with the status the hub would give it, by
	// namespace and name.
	Intents []*fleetfitv1alpha1.HPAIntent
}

// PlacementResult is what the hub would do with one Placement.
type PlacementResult struct {
	// Placement carries the status the hub would write.
	Placement *clusterv1beta1.Placement
	// Decisions are the PlacementDecisions it would hold afterwards, in name order.
	Decisions []clusterv1beta1.PlacementDecision
	// Explanation says, per cluster, which filter rejected it and each prioritizer's score.
	// Nil when the placement was not scheduled.
	Explanation *scheduler.Explanation
	// Skipped says why the placement was not scheduled; its decisions stay as they were.
	Skipped string
}

// Key is "namespace/name" of the placement.
func (r *PlacementResult) Key() string { return r.Placement.Namespace + "/" + r.Placement.Name }

// Run schedules the fleet's Placements one after the other, in namespace and name order, with
// the hub's scheduler, profile and plugins, exactly as the hub's placement controller would
// on its first pass: each cycle sees the decisions and capacity reservations of the ones
// before. The fleet is not changed.
func Run(ctx context.Context, f *Fleet, opts Options) (*Result, error) {
	if len(f.Nodes) > 0 || len(f.Pods) > 0 {
		return nil, fmt.Errorf("the fleet holds Nodes or Pods: build its inventories first")
	}
	if opts.Mode == "" {
		opts.Mode = placementmode.All
	}
	now := opts.Now
	c := cache.New()
	if f.fromFiles {
		c.SetNoInventoryReason(filesNoInventory)
	}
	c.Load(f.Objects)
	scores := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, o := range f.Scores {
		if err := scores.Add(o); err != nil {
			return nil, err
		}
	}
	existing := map[string][]*clusterv1beta1.PlacementDecision{}
	for _, d := range f.Decisions {
		if p := d.Labels[clusterv1beta1.PlacementLabel]; p != "" {
			existing[d.Namespace+"/"+p] = append(existing[d.Namespace+"/"+p], d)
		}
	}
	placements := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, p := range f.Placements {
		if err := placements.Add(p); err != nil {
			return nil, err
		}
	}
	sched, err := scheduler.New(
		scheduler.NewHandle(clocktesting.NewFakePassiveClock(now), clusterlisterv1alpha1.NewAddOnPlacementScoreLister(scores)),
		plugins.NewRegistry(), plugins.DefaultProfile())
	if err != nil {
		return nil, err
	}

	// Validate the intents first, as the hub's validation controller does before the
	// placement controller schedules with them.
	intents := make([]*fleetfitv1alpha1.HPAIntent, 0, len(f.Intents))
	lister := clusterlisterv1beta1.NewPlacementLister(placements)
	for _, in := range f.Intents {
		in = in.DeepCopy()
		meta.SetStatusCondition(&in.Status.Conditions, hpaintent.ValidCondition(lister, nil, in, metav1.NewTime(now)))
		intents = append(intents, in)
	}
	slices.SortFunc(intents, func(a, b *fleetfitv1alpha1.HPAIntent) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	if f.fromFiles {
		shapedTheirDecisions(intents, existing, now)
	}

	ordered := slices.Clone(f.Placements)
	slices.SortFunc(ordered, func(a, b *clusterv1beta1.Placement) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out := &Result{Now: now, Intents: intents}
	for _, p := range ordered {
		key := p.Namespace + "/" + p.Name
		if len(opts.Only) > 0 && !slices.Contains(opts.Only, key) {
			continue
		}
		r := PlacementResult{Placement: p.DeepCopy()}
		for _, d := range existing[key] {
			r.Decisions = append(r.Decisions, *d)
		}
		mine, skipped := intentsOf(p, intents)
		switch {
		case !opts.Mode.Handles(p):
			r.Skipped = fmt.Sprintf("OCM's %s annotation is set and the %s label is not: the hub leaves it to OCM", clusterv1beta1.PlacementDisableAnnotation, placementmode.SchedulerLabel)
		case skipped != "":
			r.Skipped = skipped
		}
		if r.Skipped != "" {
			out.Placements = append(out.Placements, r)
			continue
		}
		names := map[string][]string{}
		for _, d := range existing[key] {
			for _, cd := range d.Status.Decisions {
				names[d.Name] = append(names[d.Name], cd.ClusterName)
			}
		}
		snap := c.Snapshot()
		before := snap.DecidedNames(key)
		// The decided clusters stay as the hub's hold-still rule keeps them (with no record of
		// the placement's last move).
		pinned, why, _ := placement.HoldStill(sched, p, mine, before, nil, now)
		plan := placement.PlanCycle(ctx, placement.PlanInput{
			Scheduler: sched, Snapshot: snap, Placement: p, Intents: mine, Existing: names, Now: now, Explain: true, Pinned: pinned, Why: why,
		})
		r.Explanation = scheduler.Explain(key, plan.Result)
		r.Placement.Status = plan.Status
		for i, in := range mine {
			*in = *plan.Intents[i]
		}
		if plan.Kept {
			keepDecisions(r.Explanation, r.Decisions, plan)
		} else {
			// The hub's default timeout: within one simulation nothing expires.
			placement.Reserve(c, p, mine, before, plan.Result.Decisions(), now, placement.DefaultReservationTimeout)
			for _, d := range existing[key] {
				c.DeleteDecision(d.Namespace, d.Name)
			}
			r.Decisions = plan.Decisions
			for i := range r.Decisions {
				c.UpsertDecision(&r.Decisions[i])
			}
		}
		out.Placements = append(out.Placements, r)
	}
	return out, nil
}

// shapedTheirDecisions gives a fleet file's decisions one meaning, the hub's: a
// PlacementDecision of a file is what the hub holds now, decided with the file's intents of
// its placement. An intent that does not say which placement it last shaped
// (status.scheduledPlacement, which a hand-written file seldom carries) is taken to have shaped
// the decisions its placement holds in the file, with a Scheduled condition of its generation
// when it has none. The hub's rules for decided clusters then hold as on the hub: they stay
// while they are feasible (HoldStill pins them), and are checked as decided clusters are, so
// that an inventory gone stale does not take one away ("silence is not absence"), which is
// what explain says of such a cluster. An intent whose status names a placement keeps it: a
// file that says an intent moved, or is new to its placement, is simulated as it says.
// existing are the file's decisions by "namespace/placement".
func shapedTheirDecisions(intents []*fleetfitv1alpha1.HPAIntent, existing map[string][]*clusterv1beta1.PlacementDecision, now time.Time) {
	for _, in := range intents {
		p := in.Spec.PlacementRef.Name
		if in.Status.ScheduledPlacement != "" || !decidesAny(existing[in.Namespace+"/"+p]) {
			continue
		}
		in.Status.ScheduledPlacement = p
		if meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionScheduled) == nil {
			meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{
				Type: fleetfitv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, ObservedGeneration: in.Generation,
				Reason: "Scheduled", Message: "Placement " + p + " holds the decisions of the fleet files", LastTransitionTime: metav1.NewTime(now),
			})
		}
	}
}

func decidesAny(decisions []*clusterv1beta1.PlacementDecision) bool {
	for _, d := range decisions {
		if len(d.Status.Decisions) > 0 {
			return true
		}
	}
	return false
}

// keepDecisions makes the explanation of a cycle that failed after the scheduler chose (its
// decisions could not be laid out, say) show what the placement holds afterwards — the
// decisions it had — and why, as the placement's status and `simulate` do: explain and
// simulate read one result and never disagree.
func keepDecisions(e *scheduler.Explanation, kept []clusterv1beta1.PlacementDecision, plan *placement.Plan) {
	holds := map[string]bool{}
	e.Decisions = []scheduler.Decision{}
	for _, d := range kept {
		for _, cd := range d.Status.Decisions {
			holds[cd.ClusterName] = true
			e.Decisions = append(e.Decisions, scheduler.Decision{ClusterName: cd.ClusterName})
		}
	}
	for i := range e.Clusters {
		e.Clusters[i].Selected = holds[e.Clusters[i].Name]
	}
	if e.Error == "" && plan.Failure != nil {
		e.Error = plan.Failure.String()
	}
}

// filesNoInventory says it of a fleet read from files, where it means the files describe no
// nodes of the cluster.
const filesNoInventory = "the fleet files have no Nodes (marked " + ClusterLabel + ") and no ClusterInventory for this cluster: add them to schedule hardware requirements there"

// intentsOf returns the valid intents of p (pointers into all, so their status can be updated
// in place), or why the placement is not scheduled: an intent of it is invalid. A simulation
// schedules each placement as on the hub's first pass, so the placements the intents shaped
// before (status.scheduledPlacement) do not count.
func intentsOf(p *clusterv1beta1.Placement, all []*fleetfitv1alpha1.HPAIntent) ([]*fleetfitv1alpha1.HPAIntent, string) {
	mine := hpa.IntentsOf(p.Namespace, p.Name, all, false)
	for _, in := range mine {
		if valid, _ := hpa.IsValid(in); !valid {
			c := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionValid)
			return nil, fmt.Sprintf("HPAIntent %s is invalid, so the placement keeps its decisions: %s", in.Name, c.Message)
		}
	}
	return mine, ""
}
