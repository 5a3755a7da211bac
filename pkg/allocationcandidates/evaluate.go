package allocationcandidates

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// chunk is how many clusters a round searches at most before the answers so far are
// counted against the limit, and roundCandidates how many candidates a round may hold: a
// round searches at most roundCandidates/need clusters (need: the candidates the answer
// still lacks), so that the memory a query holds stays proportional to its answer.
const (
	chunk           = 256
	roundCandidates = 16384
)

// Evaluate answers q over the fleet of snap at now, within lim; it writes nothing. Clusters
// are searched in parallel but answered in name order and, within one, candidates come in
// the order of the search (see the package documentation), so the answer is deterministic.
// It returns an *Error naming the parameter when a required trait's label is reported by no
// cluster, a *BudgetError when the search needs more than lim.WorkBudget steps, and the
// context's error when ctx ends first; never a partial answer, except that an answer over
// lim.MaxCandidates is cut there and says so.
func Evaluate(ctx context.Context, snap *framework.Snapshot, q *Query, now time.Time, lim Limits) (*Response, error) {
	resp, _, err := evaluate(ctx, snap, q, now, lim)
	return resp, err
}

// evaluate is Evaluate, and returns the steps the search took too.
func evaluate(ctx context.Context, snap *framework.Snapshot, q *Query, now time.Time, lim Limits) (*Response, int64, error) {
	lim = lim.withDefaults()
	b := &budget{ctx: ctx, max: lim.WorkBudget}
	if err := unreportedTraits(snap, q, b); err != nil {
		if b.over.Load() {
			return nil, b.spent.Load(), stopped(ctx, q, lim)
		}
		return nil, 0, err
	}
	limit, capped := q.Limit, false
	if limit == 0 || limit > lim.MaxCandidates {
		// One candidate more than the cap tells whether the answer is cut.
		limit, capped = lim.MaxCandidates+1, true
	}
	e := newEvaluator(q, b)
	resp := &Response{AllocationRequests: []AllocationRequest{}, ProviderSummaries: map[string]*ProviderSummary{}}
	sets := e.setFilters(snap)
	searches := sync.Pool{New: func() any { return &search{e: e, alloc: new(inventory.Allocation)} }}
	answers := make([]*Response, chunk)
	// The first rounds are small and grow, so that a limit the first clusters meet does not
	// search hundreds more.
	size := 0
	for from := 0; from < snap.NumClusters(); from += size {
		need := limit - len(resp.AllocationRequests)
		if need <= 0 {
			break
		}
		size = min(max(2*size, lim.Parallelism), chunk, max(lim.Parallelism, roundCandidates/need))
		to := min(from+size, snap.NumClusters())
		clear(answers)
		workqueue.ParallelizeUntil(ctx, lim.Parallelism, to-from, func(k int) {
			i := from + k
			c := snap.Cluster(i)
			if b.over.Load() || !usable(c, now) || !sets(i) {
				return
			}
			// Looking up the required traits' labels is work too.
			if len(e.required) > 0 && !b.add(int64(len(e.required))) {
				return
			}
			if e.unreported(c.View) {
				return
			}
			s := searches.Get().(*search)
			defer searches.Put(s)
			// A cluster gives at most what the answer still lacks, so that a round holds at
			// most roundCandidates.
			s.limit = need
			answers[k] = s.cluster(c, now)
		})
		if ctx.Err() != nil || b.over.Load() {
			return nil, b.spent.Load(), stopped(ctx, q, lim)
		}
		for _, a := range answers[:to-from] {
			if a != nil {
				resp.add(a, limit)
			}
		}
	}
	if capped && len(resp.AllocationRequests) > lim.MaxCandidates {
		resp.cut(lim.MaxCandidates)
	}
	return resp, b.spent.Load(), nil
}

// stopped says why a search stopped before its end: its context ended, or it spent its
// budget.
func stopped(ctx context.Context, q *Query, lim Limits) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the search was stopped: %w", context.Cause(ctx))
	}
	numbered := 0
	for i := range q.Groups {
		if q.Groups[i].Numbered() {
			numbered++
		}
	}
	return &BudgetError{Budget: lim.WorkBudget, NumberedGroups: numbered, Limit: q.Limit}
}

// cut keeps the first n candidates, and the summaries of the providers they use, and says
// that the answer was cut.
func (r *Response) cut(n int) {
	r.AllocationRequests = r.AllocationRequests[:n:n]
	sums := make(map[string]*ProviderSummary, len(r.ProviderSummaries))
	for _, ar := range r.AllocationRequests {
		for id := range ar.Allocations {
			sums[id] = r.ProviderSummaries[id]
		}
		sums[ar.cluster] = r.ProviderSummaries[ar.cluster]
	}
	r.ProviderSummaries = sums
	r.Truncated = &Truncation{
		Candidates: n,
		Detail: fmt.Sprintf("there are more than %d candidates, the most one answer holds: give a limit of at most %d, "+
			"or narrow the query with required or member_of", n, n),
	}
}

// add appends one cluster's answer, up to limit candidates in all (0: no limit), with the
// summaries of the providers they use.
func (r *Response) add(a *Response, limit int) {
	keep := len(a.AllocationRequests)
	if limit > 0 {
		keep = min(keep, limit-len(r.AllocationRequests))
	}
	if keep <= 0 {
		return
	}
	for _, ar := range a.AllocationRequests[:keep] {
		r.AllocationRequests = append(r.AllocationRequests, ar)
		for id := range ar.Allocations {
			r.ProviderSummaries[id] = a.ProviderSummaries[id]
		}
		r.ProviderSummaries[ar.cluster] = a.ProviderSummaries[ar.cluster]
	}
}

// cluster returns the candidates of one cluster, nil when it has none.
func (s *search) cluster(c *framework.ClusterInfo, now time.Time) *Response {
	s.alloc.Reset(c.View)
	for k := range c.Reservations {
		if r := &c.Reservations[k]; r.Active(now) {
			s.alloc.Place(r.Request, r.Replicas)
		}
	}
	s.reset(c, s.alloc)
	s.numbered(0)
	s.flush()
	out := s.resp
	s.resp = nil
	return out
}

// usable reports whether a cluster's nodes count: it has a fresh inventory, is not being
// deleted, and is available — its Available condition is True, or absent, as in fleet files,
// which describe clusters without their status; a hub sets it on every cluster that joined.
func usable(c *framework.ClusterInfo, now time.Time) bool {
	if c.View == nil || c.Terminating() || !c.InventoryFresh(now) {
		return false
	}
	cond := meta.FindStatusCondition(c.Cluster.Status.Conditions, clusterv1.ManagedClusterConditionAvailable)
	return cond == nil || cond.Status == metav1.ConditionTrue
}

// evaluator is the query compiled for the search: its numbered groups, its unnumbered one and
// the tolerations each group's resources give.
type evaluator struct {
	q          *Query
	numbered   []*compiledGroup
	unnumbered *compiledGroup
	budget     *budget
	// required are the required traits of every group, whose labels a cluster must report.
	required []*Trait
}

type compiledGroup struct {
	*Group
	// tolerate tolerates the NoSchedule taints of the extended resources the group asks for.
	tolerate *inventory.Selector
	// cost is the work of trying one node run for the group: its classes and traits.
	cost int64
}

func newEvaluator(q *Query, b *budget) *evaluator {
	e := &evaluator{q: q, budget: b}
	for i := range q.Groups {
		g := &q.Groups[i]
		names := make([]corev1.ResourceName, 0, len(g.Resources))
		for _, r := range g.Resources {
			names = append(names, r.Name)
		}
		// NewSelector only fails on bad features; there are none here.
		tol, _ := inventory.NewSelector(nil, inventory.ExtendedResourceTolerations(names))
		for j := range g.Required {
			e.required = append(e.required, &g.Required[j])
		}
		cg := &compiledGroup{Group: g, tolerate: tol, cost: int64(1 + len(g.Resources) + len(g.Required))}
		for _, anyOf := range g.AnyOf {
			cg.cost += int64(len(anyOf))
		}
		if g.Numbered() {
			e.numbered = append(e.numbered, cg)
		} else {
			e.unnumbered = cg
		}
	}
	return e
}

// setFilters returns the member_of test of a cluster index.
func (e *evaluator) setFilters(snap *framework.Snapshot) func(int) bool {
	if len(e.q.MemberOf) == 0 {
		return func(int) bool { return true }
	}
	type filter struct {
		members   []*framework.Bitset
		forbidden bool
	}
	var filters []filter
	for _, f := range e.q.MemberOf {
		var ms []*framework.Bitset
		for _, name := range f.Sets {
			if b, ok := snap.ClusterSet(name); ok {
				ms = append(ms, b)
			}
		}
		filters = append(filters, filter{members: ms, forbidden: f.Forbidden})
	}
	return func(i int) bool {
		for _, f := range filters {
			in := slices.ContainsFunc(f.members, func(b *framework.Bitset) bool { return b.Has(i) })
			if in == f.forbidden {
				return false
			}
		}
		return true
	}
}

// unreported reports whether a required trait's label is one the cluster's agent does not
// report: its nodes can then neither be said to have it nor to lack it, and the cluster gives
// no candidate (as HardwareFit decides nothing on such a label). An in: list needs no such
// check: an unreported label is absent from every node, so it can only fail to match.
func (e *evaluator) unreported(v *inventory.View) bool {
	for _, t := range e.required {
		if _, unknown := v.Unreported(t.sel); unknown {
			return true
		}
	}
	return false
}
