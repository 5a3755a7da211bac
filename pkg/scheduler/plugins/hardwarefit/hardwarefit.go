// Package hardwarefit is the HardwareFit plugin: the HPAIntents of a Placement decide which
// clusters can host it, node by node.
//
// As a filter, a cluster is feasible only when, for every pod of every intent, all the
// replicas fit with their mandatory requirements. A pod is the consumers whose targets name one
// workload object, the containers of one pod template (hpa.Pod): each replica on one node that has every
// requested amount free at once and every required feature (OpenStack's numbered request
// group: one provider), replicas sharing a node when they fit together and spreading when they
// do not, one amount never split across nodes — and all consumers together, on the cluster's
// free capacity minus what earlier decisions have reserved but its inventory does not show yet.
// The cluster's total free capacity never makes it feasible by itself. The node view comes
// from the ClusterInventory the fleetfit agent reports; a cluster without one, or with a stale
// one (ClusterInfo.InventoryFresh), is not chosen anew (explain says so).
//
// A cluster the placement already decides keeps passing as long as its last report still shows
// nodes with the required features: its own pods may be running there and using the room they
// need, which a fresh fit check would count against it. Silence is not absence: an old
// inventory never takes a decided cluster away — the workload may be running there, and an
// agent that stopped reporting says nothing about it. (A cluster with no inventory at all was
// never checked, and is not kept for hardware it may not have.) Steady then keeps the
// decision stable.
//
// A feature requirement on a node label the cluster's agent does not report (outside its
// prefixes and the keys the hub asked it for, status.reportedLabels) is unknown there, whatever
// its operator: the label's absence from the report says nothing about the nodes. The cluster
// is not chosen anew for a mandatory one ("cluster X does not report label gpu yet"), a
// decided cluster is kept, as with silence, and an optional one does not score.
//
// A consumer that takes a machine type needs, instead of room on nodes, a free machine of that
// type (a reservation pod no guest has taken, as the cluster's agent reports its MachineGroups)
// per replica, counted together with the other consumers and the in-flight reservations like
// amounts ("general-machine/compute-xlarge: 1 free, 2 wanted"); a decided cluster keeps passing
// while it reports the group and type. See inventory.NewMachineRequest.
//
// The intents' compiled form (hpa.Intent, from the snapshot) is looked up once per cycle, in
// PreFilter, and Filter and Score read it from the CycleState. The check of one cluster is
// framework.ClusterInfo.FitsHardware, which the placement controller also runs per pod for the
// candidates in each intent's status.
//
// As a prioritizer, a feasible cluster scores 100 × (weight of the optional requirements it can
// also meet) / (weight of all optional requirements), so optional requirements rank clusters
// without excluding any. An optional requirement of one container counts when every replica of
// its whole pod fits with it met.
package hardwarefit

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/util/workqueue"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Name is the plugin's name, also the builtIn prioritizer name that reweights its score.
const Name = framework.HardwareFitName

// NoInventory is the reason a cluster without a ClusterInventory is not feasible.
const NoInventory = framework.NoInventory

// parallelism is how many clusters are checked at once.
const parallelism = 4

// HardwareFit is the plugin.
type HardwareFit struct{}

var (
	_ framework.PreFilterPlugin   = &HardwareFit{}
	_ framework.FilterPlugin      = &HardwareFit{}
	_ framework.ScorePlugin       = &HardwareFit{}
	_ framework.EnqueueExtensions = &HardwareFit{}
	_ framework.ReasonPlugin      = &HardwareFit{}
	_ framework.RequeuePlugin     = &HardwareFit{}
	_ framework.NotePlugin        = &HardwareFit{}
)

// New creates the plugin; it takes no arguments.
func New(_ framework.Handle, args framework.Args) (framework.Plugin, error) {
	if args.Param != "" || args.AddOn != nil {
		return nil, fmt.Errorf("%s takes no parameters", Name)
	}
	return &HardwareFit{}, nil
}

// Name implements framework.Plugin.
func (p *HardwareFit) Name() string { return Name }

// stateKey is where PreFilter leaves the cycle's consumers for Filter and Score.
const stateKey framework.StateKey = Name

// cycleState is what one cycle checks: the pods of all the request's intents, in order.
type cycleState struct {
	pods []*hpa.Pod
	// optionalWeight is the weight of all their optional requirements.
	optionalWeight int64
	// weighted is set when a pod splits its replicas by weights: a cluster without weight
	// does not pass.
	weighted bool
	// splits is set when a pod divides its replicas among clusters.
	splits bool
	// backoff are the clusters the intents moved away from, in back-off at the cycle's time
	// (see backoffs), and backoffEnds when the first of those ends.
	backoff     map[string]backoff
	backoffEnds time.Time
	// misconfigured is set when an intent does not compile; Filter returns it, so that the
	// cycle reports it where this filter stands in the profile, like any filter's verdict.
	misconfigured *framework.Status
}

// PreFilter implements framework.PreFilterPlugin: it looks up the intents' compiled form once
// for the cycle. It never fails the cycle itself (see cycleState.misconfigured).
func (p *HardwareFit) PreFilter(_ context.Context, state *framework.CycleState, snap *framework.Snapshot, req *framework.Request) *framework.Status {
	state.Write(stateKey, prepare(snap, req))
	return nil
}

// prepare flattens the compiled pods of the request's intents.
func prepare(snap *framework.Snapshot, req *framework.Request) *cycleState {
	return prepareWith(snap.Intent, req)
}

func prepareWith(compile func(*fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error), req *framework.Request) *cycleState {
	s := &cycleState{}
	for _, in := range req.Intents {
		compiled, err := compile(in)
		if err != nil {
			return &cycleState{misconfigured: framework.Misconfiguredf("HPAIntent %s: %v", in.Name, err)}
		}
		for i := range compiled.Pods {
			p := &compiled.Pods[i]
			s.pods = append(s.pods, p)
			s.weighted = s.weighted || p.Split != nil && p.Split.Policy == fleetfitv1alpha1.SplitByWeights
			s.splits = s.splits || p.Split != nil
			for _, c := range p.Consumers {
				for k := range c.Optional {
					s.optionalWeight += int64(c.Optional[k].Weight)
				}
			}
		}
	}
	s.backoff, s.backoffEnds = backoffs(req.Intents, req.Now)
	return s
}

// stateOf returns what PreFilter prepared, or prepares it now for a cycle that did not run
// it (a profile with HardwareFit only as a prioritizer, or a caller of Filter or Score alone).
func stateOf(state *framework.CycleState, snap *framework.Snapshot, req *framework.Request) *cycleState {
	if state != nil {
		if d, ok := state.Read(stateKey); ok {
			if s, ok := d.(*cycleState); ok {
				return s
			}
		}
	}
	s := prepare(snap, req)
	if state != nil {
		state.Write(stateKey, s)
	}
	return s
}

// Watches implements framework.EnqueueExtensions: the filter reads reports for placements with intents.
func (p *HardwareFit) Watches(req *framework.Request) bool { return len(req.Intents) > 0 }

// ClusterChanged implements framework.EnqueueExtensions. What the filter reads of a cluster is
// its report and the reservations on it; what a new report can change depends on what the
// cluster is to the placement:
//   - a cluster the placement decides keeps passing while its nodes have the features the
//     pods require (see stillFits), whatever room is left, which its own pods may be using:
//     only a change of that answer requeues it;
//   - a cluster it does not decide matters only when the placement waits for clusters, and
//     then only when the full check passes now and did not before (room freed, a node added,
//     a report fresh again, a reservation released);
//   - to a placement that has all the clusters it asked for, room appearing or going on a
//     cluster it does not decide changes nothing: new decisions only fill unscheduled slots,
//     and the optional requirements' score does not by itself move a decided cluster.
func (p *HardwareFit) ClusterChanged(ev framework.ClusterEvent, t *framework.Target) framework.QueueingHint {
	if len(t.Request.Intents) == 0 || (!t.Decides && !t.Waiting) {
		return framework.QueueSkip
	}
	if !t.Decides && !ev.MayAdmitMore() {
		// Nothing fits there now that did not before: no need to check this placement's pods.
		return framework.QueueSkip
	}
	s := prepareWith(t.Intent, t.Request)
	if s.misconfigured != nil {
		// The intent's own events bring the placement back; no cluster changes that.
		return framework.QueueSkip
	}
	key := t.Request.Key()
	// As in Filter: the relaxed check only when every intent chose the decided clusters.
	relaxed := t.Decides && t.Request.KeepsDecided()
	fits := func(info *framework.ClusterInfo) bool {
		if info == nil {
			return false
		}
		return info.HardwareFits(s.pods, key, relaxed, ev.Now)
	}
	now := fits(ev.New)
	if t.Waiting && s.splits && ev.MayAdmitMore() && now {
		// Replicas of a split wait for room, which this cluster may now have beside the
		// smallest share it held before.
		return framework.Queue
	}
	if t.Decides {
		if ev.Old == nil || now != fits(ev.Old) {
			return framework.Queue
		}
		return framework.QueueSkip
	}
	if now && !fits(ev.Old) {
		return framework.Queue
	}
	return framework.QueueSkip
}

// Filter implements framework.FilterPlugin. It decides only whether each cluster fits; a
// reason is worded for a rejected cluster only when rejections is non-nil (the scheduler asks
// Reason instead, for the clusters explain shows).
func (p *HardwareFit) Filter(ctx context.Context, state *framework.CycleState, snap *framework.Snapshot, req *framework.Request,
	candidates *framework.Bitset, rejections framework.Rejections) (*framework.Bitset, *framework.Status) {
	if len(req.Intents) == 0 {
		return candidates, nil
	}
	s := stateOf(state, snap, req)
	if s.misconfigured != nil {
		return nil, s.misconfigured
	}
	idx := candidates.Indexes()
	fit := make([]framework.Fit, len(idx))
	key := req.Key()
	keep := req.KeepsDecided()
	workqueue.ParallelizeUntil(ctx, parallelism, len(idx), func(k int) {
		info := snap.Cluster(idx[k])
		if _, off := s.backoff[info.Name()]; off {
			return
		}
		if s.weighted && unweighted(s.pods, info) != nil {
			return
		}
		fit[k] = info.HardwareFit(s.pods, key, keep && req.Decided.Has(idx[k]), req.Now)
	})
	now := 0
	for _, f := range fit {
		if f == framework.FitNow {
			now++
		}
	}
	scaleUp := needsScaleUp(req, now)
	out := framework.NewBitset(candidates.Len())
	for k, i := range idx {
		if fit[k] == framework.FitNow || (fit[k] == framework.FitAfterScaleUp && scaleUp) {
			out.Set(i)
		} else if rejections != nil {
			rejections.Reject(i, p.Reason(state, snap, req, i))
		}
	}
	return out, nil
}

// needsScaleUp reports whether the placement takes clusters that fit only once their pools
// add nodes, given how many fit now: only when too few do. A placement with
// numberOfClusters needs that many; one without takes every feasible cluster, so clusters
// that must grow join only when none fits now.
func needsScaleUp(req *framework.Request, now int) bool {
	if n := req.Placement.Spec.NumberOfClusters; n != nil {
		return now < int(*n)
	}
	return now == 0
}

// Note implements framework.NotePlugin: the nodes a feasible cluster must add first.
func (p *HardwareFit) Note(state *framework.CycleState, snap *framework.Snapshot, req *framework.Request, i int) string {
	s := stateOf(state, snap, req)
	if s.misconfigured != nil || len(req.Intents) == 0 {
		return ""
	}
	return snap.Cluster(i).ScaleUpNeeded(s.pods, req.Key(), req.KeepsDecided() && req.Decided.Has(i), req.Now)
}

// Reason implements framework.ReasonPlugin: why the cluster at index i does not fit.
func (p *HardwareFit) Reason(state *framework.CycleState, snap *framework.Snapshot, req *framework.Request, i int) string {
	s := stateOf(state, snap, req)
	if s.misconfigured != nil {
		return s.misconfigured.Message()
	}
	info := snap.Cluster(i)
	if b, off := s.backoff[info.Name()]; off {
		return b.why()
	}
	if s.weighted && unweighted(s.pods, info) != nil {
		return "split by weights: no entry of split.weights matches the cluster's labels, so it gets no share; add a weight whose clusterSelector matches it"
	}
	decided := req.KeepsDecided() && req.Decided.Has(i)
	if need := info.ScaleUpNeeded(s.pods, req.Key(), decided, req.Now); need != "" {
		return need + "; not chosen: enough clusters fit now without adding nodes"
	}
	_, why := info.FitsHardware(s.pods, req.Key(), decided, req.Now)
	return why
}

// Score implements framework.ScorePlugin.
func (p *HardwareFit) Score(_ context.Context, state *framework.CycleState, snap *framework.Snapshot, req *framework.Request,
	feasible *framework.Bitset, scores []int64) *framework.Status {
	if len(req.Intents) == 0 {
		return nil
	}
	s := stateOf(state, snap, req)
	if s.misconfigured != nil {
		return s.misconfigured
	}
	if s.optionalWeight == 0 {
		return nil
	}
	feasible.ForEach(func(i int) {
		scores[i] = framework.MaxClusterScore * optionalWeightMet(snap.Cluster(i), s.pods) / s.optionalWeight
	})
	return nil
}

// optionalWeightMet sums the weights of the optional requirements the cluster can meet for all
// the replicas of their pod (each checked on its own, with the mandatory needs of every
// container of the pod).
func optionalWeightMet(info *framework.ClusterInfo, pods []*hpa.Pod) int64 {
	if info.View == nil {
		return 0
	}
	var met int64
	for _, p := range pods {
		for _, c := range p.Consumers {
			for k := range c.Optional {
				if o := &c.Optional[k]; c.MeetsOptional(info.View, o) {
					met += int64(o.Weight)
				}
			}
		}
	}
	return met
}
