// Package scheduler runs fleetfit's scheduling cycle: from a Placement (and the HPAIntents
// that refer to it) and an immutable Snapshot of the fleet to the ordered list of clusters
// to decide, with a record of every filter and prioritizer for explain. It changes nothing:
// the placement controller writes the decisions, the CLI prints them.
package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Profile says which plugins a scheduler runs.
type Profile struct {
	// Filters run for every placement, in this order (the order matters only for explain).
	Filters []string
	Weights Weights
}

// Scheduler runs cycles. It is safe for concurrent use by several workers.
type Scheduler struct {
	handle   framework.Handle
	registry framework.Registry
	weights  Weights
	filters  []framework.FilterPlugin
	// plugins holds the plugins created without arguments, shared by all cycles; a plugin
	// that is both a filter and a prioritizer is one instance.
	plugins sync.Map // name -> framework.Plugin
	// parameterised holds prioritizers created from ScoreCoordinates with arguments.
	parameterised sync.Map // coordinate key -> framework.Plugin
	metrics       Observer
}

// Observer receives plugin durations; the hub wires it to Prometheus.
type Observer interface {
	ObservePlugin(extensionPoint, plugin string, d time.Duration)
}

type noopObserver struct{}

func (noopObserver) ObservePlugin(string, string, time.Duration) {}

// New creates a scheduler. Unknown filter names are an error: the profile is the binary's
// configuration, not user input.
func New(h framework.Handle, registry framework.Registry, profile Profile) (*Scheduler, error) {
	s := &Scheduler{handle: h, registry: registry, weights: profile.Weights, metrics: noopObserver{}}
	for _, name := range profile.Filters {
		p, err := s.plugin(name)
		if err != nil {
			return nil, err
		}
		f, ok := p.(framework.FilterPlugin)
		if !ok {
			return nil, fmt.Errorf("plugin %s is not a filter", name)
		}
		s.filters = append(s.filters, f)
	}
	return s, nil
}

// WithObserver sets the observer of plugin durations and returns s.
func (s *Scheduler) WithObserver(o Observer) *Scheduler {
	if o != nil {
		s.metrics = o
	}
	return s
}

func (s *Scheduler) plugin(name string) (framework.Plugin, error) {
	if p, ok := s.plugins.Load(name); ok {
		return p.(framework.Plugin), nil
	}
	factory, ok := s.registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown plugin %q", name)
	}
	p, err := factory(s.handle, framework.Args{})
	if err != nil {
		return nil, err
	}
	actual, _ := s.plugins.LoadOrStore(name, p)
	return actual.(framework.Plugin), nil
}

func (s *Scheduler) prioritizer(c coordinate) (framework.ScorePlugin, *framework.Status) {
	var p framework.Plugin
	if c.args.Param == "" && c.args.AddOn == nil {
		if _, known := s.registry[c.plugin]; !known {
			return nil, framework.Misconfiguredf("incorrect builtin prioritizer: %s", c.name)
		}
		var err error
		if p, err = s.plugin(c.plugin); err != nil {
			return nil, framework.Misconfiguredf("prioritizer %s: %v", c.name, err)
		}
	} else if cached, ok := s.parameterised.Load(c.key); ok {
		p = cached.(framework.Plugin)
	} else {
		factory, ok := s.registry[c.plugin]
		if !ok {
			return nil, framework.Misconfiguredf("incorrect builtin prioritizer: %s", c.name)
		}
		created, err := factory(s.handle, c.args)
		if err != nil {
			return nil, framework.Misconfiguredf("prioritizer %s: %v", c.name, err)
		}
		actual, _ := s.parameterised.LoadOrStore(c.key, created)
		p = actual.(framework.Plugin)
	}
	sp, ok := p.(framework.ScorePlugin)
	if !ok {
		return nil, framework.Misconfiguredf("incorrect builtin prioritizer: %s is not a prioritizer", c.name)
	}
	return sp, nil
}

// Options tune one cycle.
type Options struct {
	// Explain records per-cluster rejection reasons and per-prioritizer scores.
	Explain bool
	// MaxReasons, when positive, bounds how many of each filter's rejections are recorded,
	// with their reasons, in cluster order. A cycle that shows only a few reasons (an intent's
	// condition) sets it, so that a fleet of rejected clusters costs no words.
	MaxReasons int
}

// Schedule runs one cycle. The result is always non-nil and records how far the cycle got; a
// failure status (Misconfigured or Error) means the caller must keep the existing decisions.
func (s *Scheduler) Schedule(ctx context.Context, snap *framework.Snapshot, req *framework.Request, opts Options) *Result {
	logger := klog.FromContext(ctx)
	res := &Result{snap: snap, explain: opts.Explain, maxReasons: opts.MaxReasons, now: req.Now}
	p := req.Placement

	// 1. Clusters available to the placement: members of the cluster sets bound to its
	// namespace (intersected with spec.clusterSets), without terminating clusters.
	bound := sets.New[string]()
	for _, b := range snap.BindingNames(p.Namespace) {
		if snap.SetExists(b) {
			bound.Insert(b)
		}
	}
	res.NumBindings = bound.Len()
	eligible := bound
	if len(p.Spec.ClusterSets) > 0 {
		eligible = bound.Intersection(sets.New(p.Spec.ClusterSets...))
	}
	res.EligibleSets = sets.List(eligible)
	available := framework.NewBitset(snap.NumClusters())
	for _, name := range res.EligibleSets {
		if members, ok := snap.ClusterSet(name); ok {
			available.Or(members)
		}
	}
	available.AndNot(snap.Terminating())
	res.Available = available

	state := framework.NewCycleState()
	for _, f := range s.filters {
		pf, ok := f.(framework.PreFilterPlugin)
		if !ok {
			continue
		}
		if st := pf.PreFilter(ctx, state, snap, req).WithPlugin(pf.Name()); st.IsFailure() {
			res.Status = st
			return res
		}
	}

	// 2. Filters, concurrently; the feasible set is the intersection of their results.
	feasible, st := s.runFilters(ctx, state, snap, req, available, res)
	if st.IsFailure() {
		res.Status = st
		return res
	}
	res.mergeStatus(st)
	res.Feasible = feasible
	if res.explain {
		for _, f := range s.filters {
			if np, ok := f.(framework.NotePlugin); ok {
				feasible.ForEach(func(i int) {
					if note := np.Note(state, snap, req, i); note != "" {
						if res.Notes == nil {
							res.Notes = map[string]string{}
						}
						res.Notes[snap.Cluster(i).Name()] = note
					}
				})
			}
		}
	}

	// 3. Prioritizers and their weights.
	coords, st := s.weights.prioritizerCoordinates(p)
	if st.IsFailure() {
		res.Status = st
		return res
	}
	totals := make([]int64, snap.NumClusters())
	var requeuers []framework.RequeuePlugin
	for _, f := range s.filters {
		if r, ok := f.(framework.RequeuePlugin); ok {
			requeuers = append(requeuers, r)
		}
	}
	// Resolve every prioritizer before scoring, so a misconfigured one stops the cycle before
	// any work is done and explain never shows a partial list.
	prioritizers := make([]framework.ScorePlugin, len(coords))
	for k, c := range coords {
		sp, st := s.prioritizer(c)
		if st.IsFailure() {
			// No plugin name: the message names the prioritizer, and the condition reads
			// ":incorrect builtin prioritizer: X" exactly as OCM's does.
			res.Status = st
			return res
		}
		prioritizers[k] = sp
	}
	for k, c := range coords {
		sp := prioritizers[k]
		scores := make([]int64, snap.NumClusters())
		start := time.Now()
		st = sp.Score(ctx, state, snap, req, feasible, scores)
		s.metrics.ObservePlugin("Score", sp.Name(), time.Since(start))
		st = st.WithPlugin(c.name)
		if st.IsFailure() {
			res.Status = st
			return res
		}
		if st.Code() == framework.Warning {
			logger.V(logs.Changes).Info("Prioritizer warning", "prioritizer", c.name, "message", st.Message())
		}
		res.mergeStatus(st)
		w := int64(c.weight)
		feasible.ForEach(func(i int) {
			sc := min(max(scores[i], framework.MinClusterScore), framework.MaxClusterScore)
			totals[i] += w * sc
		})
		res.Prioritizers = append(res.Prioritizers, PrioritizerResult{Name: c.name, Weight: c.weight, scores: scores})
		if r, ok := sp.(framework.RequeuePlugin); ok && !slices.Contains(requeuers, r) {
			requeuers = append(requeuers, r)
		}
	}
	res.totals = totals

	// 4. Order by total score, then by name (index order is name order). In a sticky cycle the
	// decided clusters rank with a margin, for the order only: the scores stay as computed.
	ordered := feasible.Indexes()
	rank := totals
	if req.Sticky && req.Decided != nil {
		var weight int64
		for _, c := range coords {
			weight = max(weight, int64(c.weight))
		}
		rank = slices.Clone(totals)
		req.Decided.ForEach(func(i int) {
			if i < len(rank) {
				rank[i] += framework.StickyMargin * weight
			}
		})
	}
	// The comparison is a total order, so an unstable sort is deterministic and avoids the
	// O(n log² n) merges of a stable one.
	slices.SortFunc(ordered, func(a, b int) int {
		if c := cmp.Compare(rank[b], rank[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if req.Pinned != nil {
		// The pinned clusters that are still feasible come first, in score order: they are
		// selected before any other (and, with spread constraints, picked first).
		pinned := make([]int, 0, len(ordered))
		rest := make([]int, 0, len(ordered))
		for _, i := range ordered {
			if req.Pinned.Has(i) {
				pinned = append(pinned, i)
			} else {
				rest = append(rest, i)
			}
		}
		ordered = append(pinned, rest...)
	}
	res.ordered = ordered

	// 5. Select numberOfClusters (all when unset), honouring spread constraints.
	want := len(ordered)
	if p.Spec.NumberOfClusters != nil {
		want = int(*p.Spec.NumberOfClusters)
		// The API does not forbid a negative number; refuse it instead of panicking.
		if want < 0 {
			res.Status = framework.Misconfiguredf("numberOfClusters must not be negative, got %d", want)
			return res
		}
	}
	selected, st := selectClusters(snap, p, ordered, want)
	if st.IsFailure() {
		res.Status = st
		return res
	}
	if p.Spec.NumberOfClusters != nil {
		res.Unscheduled = max(want-len(selected), 0)
	}
	// 5b. Split intents divide their replicas among the selected clusters; the clusters that
	// get no share in any are not needed.
	if divisions := s.split(ctx, state, snap, req, selected); len(divisions) > 0 {
		res.Divisions = divisions
		shared := framework.NewBitset(snap.NumClusters())
		unplaced := int32(0)
		for k := range divisions {
			d := &divisions[k]
			for j, i := range d.Clusters {
				if d.Shares[j] > 0 {
					shared.Set(i)
				}
			}
			unplaced += d.Unplaced
		}
		needed := make([]int, 0, len(selected))
		for _, i := range selected {
			if shared.Has(i) {
				needed = append(needed, i)
			}
		}
		selected = needed
		if unplaced == 0 {
			res.Unscheduled = 0
		}
	}
	res.selected = selected

	// 6. The earliest time at which the result may change by itself, as the next cycle will
	// see it: with this cycle's selection as the decided clusters (a toleration that expires
	// on a cluster decided just now must bring the placement back at expiry).
	next := *req
	next.Decided = framework.NewBitset(snap.NumClusters())
	for _, i := range selected {
		next.Decided.Set(i)
	}
	for _, r := range requeuers {
		if d := r.RequeueAfter(ctx, state, snap, &next); d > 0 && (res.RequeueAfter == 0 || d < res.RequeueAfter) {
			res.RequeueAfter = d
		}
	}
	return res
}

// split asks the filters that divide replicas for their divisions of the selected clusters.
func (s *Scheduler) split(ctx context.Context, state *framework.CycleState, snap *framework.Snapshot, req *framework.Request, selected []int) []framework.Division {
	var out []framework.Division
	for _, f := range s.filters {
		if sp, ok := f.(framework.SplitPlugin); ok {
			start := time.Now()
			out = append(out, sp.Split(ctx, state, snap, req, selected)...)
			s.metrics.ObservePlugin("Split", sp.Name(), time.Since(start))
		}
	}
	return out
}

type filterOutcome struct {
	result     *framework.Bitset
	status     *framework.Status
	rejections map[int]string
}

type rejectionMap map[int]string

func (r rejectionMap) Reject(i int, reason string) {
	if _, ok := r[i]; !ok {
		r[i] = reason
	}
}

func (s *Scheduler) runFilters(ctx context.Context, state *framework.CycleState, snap *framework.Snapshot,
	req *framework.Request, candidates *framework.Bitset, res *Result) (*framework.Bitset, *framework.Status) {
	outcomes := make([]filterOutcome, len(s.filters))
	run := func(i int) {
		f := s.filters[i]
		var rec framework.Rejections
		if _, lazy := f.(framework.ReasonPlugin); res.explain && !lazy {
			m := rejectionMap{}
			outcomes[i].rejections = m
			rec = m
		}
		start := time.Now()
		out, st := f.Filter(ctx, state, snap, req, candidates, rec)
		s.metrics.ObservePlugin("Filter", f.Name(), time.Since(start))
		outcomes[i].result, outcomes[i].status = out, st.WithPlugin(f.Name())
	}
	if len(s.filters) > 1 {
		var wg sync.WaitGroup
		for i := range s.filters {
			wg.Go(func() { run(i) })
		}
		wg.Wait()
	} else if len(s.filters) == 1 {
		run(0)
	}

	feasible := candidates.Clone()
	var warning *framework.Status
	var names []string
	for i, f := range s.filters {
		o := outcomes[i]
		if o.status.IsFailure() {
			return nil, o.status
		}
		if o.status.Code() == framework.Warning {
			warning = o.status
		}
		if o.result == nil {
			return nil, framework.AsStatus(fmt.Errorf("filter %s returned no result", f.Name())).WithPlugin(f.Name())
		}
		before := feasible.Clone()
		feasible.And(o.result)
		names = append(names, f.Name())
		fr := FilterResult{Name: joinNames(names), Plugin: f.Name(), set: feasible.Clone()}
		if res.explain {
			before.AndNot(feasible)
			rp, lazy := f.(framework.ReasonPlugin)
			before.ForEach(func(c int) {
				if res.maxReasons > 0 && len(fr.Rejected) >= res.maxReasons {
					return
				}
				reason := o.rejections[c]
				if lazy {
					reason = rp.Reason(state, snap, req, c)
				}
				if reason == "" {
					reason = "rejected"
				}
				fr.Rejected = append(fr.Rejected, Rejection{Cluster: snap.Cluster(c).Name(), Reason: reason})
			})
		}
		res.Filters = append(res.Filters, fr)
	}
	return feasible, warning
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ","
		}
		out += n
	}
	return out
}
