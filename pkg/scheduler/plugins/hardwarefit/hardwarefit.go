// Package hardwarefit is the HardwareFit plugin: the HPAIntents of a Placement decide which
// clusters can host it, node by node.
//
// As a filter, a cluster is feasible only when, for every consumer of every intent, all the
// replicas fit with their mandatory requirements: each replica on one node that has every
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
// As a prioritizer, a feasible cluster scores 100 × (weight of the optional requirements it can
// also meet) / (weight of all optional requirements), so optional requirements rank clusters
// without excluding any.
package hardwarefit

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Name is the plugin's name, also the builtIn prioritizer name that reweights its score.
const Name = "HardwareFit"

// parallelism is how many clusters are checked at once.
const parallelism = 4

// HardwareFit is the plugin.
type HardwareFit struct{}

var (
	_ framework.FilterPlugin = &HardwareFit{}
	_ framework.ScorePlugin  = &HardwareFit{}
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

// Consumer is one consumer of an intent, compiled into inventory requests.
type Consumer struct {
	// Intent and Name identify it: "<intent>/<consumer>".
	Intent, Name string
	Replicas     int64
	// Request is one replica with the mandatory requirements, and Requests the same as
	// Kubernetes amounts.
	Request  *inventory.Request
	Requests corev1.ResourceList
	// Optional are the optional requirements, each as Request plus that requirement.
	Optional []Optional
}

// Optional is one optional requirement of a consumer.
type Optional struct {
	Name    string
	Weight  int64
	Request *inventory.Request
}

type compiledIntent struct {
	generation int64
	consumers  []Consumer
	err        error
}

// compiled caches compiled intents by UID and generation, shared by the plugin and the
// controllers that need the same consumers (reservations, candidates, delivery), so that an
// intent is resolved once per generation, not once per use.
var compiled = struct {
	sync.Mutex
	m map[types.UID]*compiledIntent
}{m: map[types.UID]*compiledIntent{}}

// Consumers compiles intents into their consumers, in order, each intent once per
// generation. Intents without a UID (not stored yet, as in a dry run) are compiled each time.
func Consumers(intents ...*fleetfitv1alpha1.HPAIntent) ([]Consumer, error) {
	var out []Consumer
	for _, in := range intents {
		c := compile(in)
		if c.err != nil {
			return nil, fmt.Errorf("HPAIntent %s: %w", in.Name, c.err)
		}
		out = append(out, c.consumers...)
	}
	return out, nil
}

func compile(in *fleetfitv1alpha1.HPAIntent) *compiledIntent {
	if in.UID != "" {
		compiled.Lock()
		c, ok := compiled.m[in.UID]
		compiled.Unlock()
		if ok && c.generation == in.Generation {
			return c
		}
	}
	c := &compiledIntent{generation: in.Generation}
	c.consumers, c.err = Compile(in)
	if in.UID != "" {
		compiled.Lock()
		if len(compiled.m) > 4096 {
			clear(compiled.m)
		}
		compiled.m[in.UID] = c
		compiled.Unlock()
	}
	return c
}

// Compile turns an intent into consumers with inventory requests.
func Compile(in *fleetfitv1alpha1.HPAIntent) ([]Consumer, error) {
	r, err := hpa.Resolve(in)
	if err != nil {
		return nil, err
	}
	var out []Consumer
	for i := range r.Consumers {
		rc := &r.Consumers[i]
		tolerations := r.Tolerations(rc)
		req, err := inventory.NewRequest(rc.Requests, rc.Features, tolerations)
		if err != nil {
			return nil, fmt.Errorf("consumer %q: %w", rc.Name, err)
		}
		c := Consumer{Intent: in.Name, Name: rc.Name, Replicas: int64(rc.Replicas), Request: req, Requests: rc.Requests}
		for _, o := range rc.Optional {
			requests := rc.Requests.DeepCopy()
			for name, q := range o.Requests {
				requests[name] = q
			}
			features := rc.Features
			if o.Feature != nil {
				features = append(features[:len(features):len(features)], *o.Feature)
			}
			// A pod that meets an optional amount requests it, so it also tolerates that
			// resource's taint, such as nvidia.com/gpu:NoSchedule on GPU nodes.
			withOptional := *rc
			withOptional.Requests = requests
			oreq, err := inventory.NewRequest(requests, features, r.Tolerations(&withOptional))
			if err != nil {
				return nil, fmt.Errorf("consumer %q, optional requirement %q: %w", rc.Name, o.Name, err)
			}
			c.Optional = append(c.Optional, Optional{Name: o.Name, Weight: int64(o.Weight), Request: oreq})
		}
		out = append(out, c)
	}
	return out, nil
}

// allocations holds Allocations for Fits to reuse: the scratch buffers of a fresh Allocation
// per cluster were most of what a Filter over a large fleet allocated. Nothing Fits returns
// refers to an Allocation, so Reset may reuse its memory.
var allocations = sync.Pool{New: func() any { return new(inventory.Allocation) }}

// Fits reports whether every consumer's replicas fit on the cluster together, after the
// active reservations other placements hold there, and why not. placementKey names the
// placement being scheduled, whose own reservations are not subtracted.
func Fits(info *framework.ClusterInfo, consumers []Consumer, placementKey string, now time.Time) (bool, string) {
	if ok, why := fresh(info, now); !ok {
		return false, why
	}
	for _, c := range consumers {
		if c.Replicas <= 0 {
			continue
		}
		if key, unknown := info.View.Unreported(c.Request.Selector()); unknown {
			return false, unreported(info, c, key)
		}
	}
	alloc := allocations.Get().(*inventory.Allocation)
	defer allocations.Put(alloc)
	alloc.Reset(info.View)
	for k := range info.Reservations {
		r := &info.Reservations[k]
		if r.Placement != placementKey && r.Active(now) {
			alloc.Place(r.Request, r.Replicas)
		}
	}
	for _, c := range consumers {
		if c.Replicas <= 0 {
			continue
		}
		placed := alloc.Place(c.Request, c.Replicas)
		if placed >= c.Replicas {
			continue
		}
		if ok, why := info.View.FitsOnOneNode(c.Request); !ok {
			return false, fmt.Sprintf("consumer %s/%s: %s", c.Intent, c.Name, why)
		}
		if placed == 0 {
			return false, fmt.Sprintf("consumer %s/%s: no node has room left for a replica once other consumers and in-flight placements are counted", c.Intent, c.Name)
		}
		return false, fmt.Sprintf("consumer %s/%s: only %d of %d replicas fit on the cluster's nodes", c.Intent, c.Name, placed, c.Replicas)
	}
	return true, ""
}

// FitsConsumer reports whether one consumer's replicas fit on the cluster on their own (after
// other placements' reservations), with the relaxed check for a cluster already decided.
func FitsConsumer(info *framework.ClusterInfo, c Consumer, placementKey string, decided bool, now time.Time) (bool, string) {
	if decided {
		return stillFits(info, []Consumer{c}, now)
	}
	return Fits(info, []Consumer{c}, placementKey, now)
}

// stillFits is the check for a cluster the placement already decides: its own pods may already
// run there and take the room they need, so only the nodes' features are checked again, from
// the last report however old (a consumer whose required features no schedulable node has any
// more loses the cluster). A feature on a label the cluster does not report is unknown there,
// not missing, so it keeps the cluster, as silence does: the agent is told which keys to
// report and answers within one report.
func stillFits(info *framework.ClusterInfo, consumers []Consumer, _ time.Time) (bool, string) {
	if info.View == nil {
		return false, NoInventory
	}
	for _, c := range consumers {
		if _, unknown := info.View.Unreported(c.Request.Selector()); unknown {
			continue
		}
		if !info.View.HasNode(c.Request.Selector()) {
			_, why := info.View.FitsOnOneNode(c.Request)
			return false, fmt.Sprintf("consumer %s/%s: %s", c.Intent, c.Name, why)
		}
	}
	return true, ""
}

// unreported is why a cluster is not chosen for a consumer that requires a label its agent
// does not report (yet: the hub asks every agent for the keys intents use).
func unreported(info *framework.ClusterInfo, c Consumer, key string) string {
	why := fmt.Sprintf("consumer %s/%s: cluster %s does not report label %s yet", c.Intent, c.Name, info.Name(), key)
	if info.Inventory != nil && info.Inventory.Status.ReportedLabels == nil {
		// Its agent will not answer the hub's request: it predates it.
		why += " (its fleetfit agent does not say which labels it reports, so only the default prefixes count: upgrade the agent)"
	}
	return why
}

// NoInventory is the reason a cluster without a ClusterInventory is not feasible. On a hub
// that means no agent reports for the cluster; a simulation over fleet files words it for files.
const NoInventory = "no ClusterInventory: run the fleetfit agent on the cluster to schedule hardware requirements there"

func fresh(info *framework.ClusterInfo, now time.Time) (bool, string) {
	if info.View == nil {
		return false, NoInventory
	}
	if !info.InventoryFresh(now) {
		age, _ := info.InventoryAge(now)
		return false, fmt.Sprintf("the ClusterInventory is %s old (more than %s): not chosen anew until the fleetfit agent reports again (is it running, and can it reach the hub?)",
			age.Round(time.Second), info.StaleAfter)
	}
	return true, ""
}

// Filter implements framework.FilterPlugin.
func (p *HardwareFit) Filter(ctx context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request,
	candidates *framework.Bitset, rejections framework.Rejections) (*framework.Bitset, *framework.Status) {
	if len(req.Intents) == 0 {
		return candidates, nil
	}
	consumers, err := Consumers(req.Intents...)
	if err != nil {
		return nil, framework.Misconfiguredf("%v", err)
	}
	idx := candidates.Indexes()
	ok := make([]bool, len(idx))
	reasons := make([]string, len(idx))
	key := req.Key()
	keep := KeepsDecided(req)
	workqueue.ParallelizeUntil(ctx, parallelism, len(idx), func(k int) {
		if keep && req.Decided.Has(idx[k]) {
			ok[k], reasons[k] = stillFits(snap.Cluster(idx[k]), consumers, req.Now)
			return
		}
		ok[k], reasons[k] = Fits(snap.Cluster(idx[k]), consumers, key, req.Now)
	})
	out := framework.NewBitset(candidates.Len())
	for k, i := range idx {
		if ok[k] {
			out.Set(i)
		} else if rejections != nil {
			rejections.Reject(i, reasons[k])
		}
	}
	return out, nil
}

// KeepsDecided reports whether the placement's decided clusters get the relaxed check of
// stillFits. They do when every intent has shaped the placement's decisions before
// (status.scheduledPlacement names it): then its pods may run there. An intent that never
// did — just created, moved from another placement, or seen by the hub after its Placement —
// did not choose those clusters, and its requirements are checked on them in full.
func KeepsDecided(req *framework.Request) bool {
	for _, in := range req.Intents {
		if in.Status.ScheduledPlacement != req.Placement.Name {
			return false
		}
	}
	return true
}

// Score implements framework.ScorePlugin.
func (p *HardwareFit) Score(_ context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request,
	feasible *framework.Bitset, scores []int64) *framework.Status {
	if len(req.Intents) == 0 {
		return nil
	}
	consumers, err := Consumers(req.Intents...)
	if err != nil {
		return framework.Misconfiguredf("%v", err)
	}
	var total int64
	for _, c := range consumers {
		for _, o := range c.Optional {
			total += o.Weight
		}
	}
	if total == 0 {
		return nil
	}
	feasible.ForEach(func(i int) {
		scores[i] = framework.MaxClusterScore * OptionalWeightMet(snap.Cluster(i), consumers) / total
	})
	return nil
}

// OptionalWeightMet sums the weights of the optional requirements the cluster can meet for all
// of a consumer's replicas (each checked on its own, with the consumer's mandatory needs).
func OptionalWeightMet(info *framework.ClusterInfo, consumers []Consumer) int64 {
	if info.View == nil {
		return 0
	}
	var met int64
	for _, c := range consumers {
		for _, o := range c.Optional {
			if n, _ := info.View.MaxReplicas(o.Request); n >= max(c.Replicas, 1) {
				met += o.Weight
			}
		}
	}
	return met
}
