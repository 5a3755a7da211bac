package candidates

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// maxSpreadSteps bounds the search for an unnumbered group spread over several nodes of one
// cluster (tried only when no single node can take it): beyond it, the cluster gives no spread
// candidate. It keeps a query with many classes over many shapes from running away.
const maxSpreadSteps = 10000

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

// nodeUse is one node of a run that the candidate being built takes from.
type nodeUse struct {
	taken    []inventory.Amount
	groups   int // groups placed on it
	numbered int // numbered groups among them
}

// search enumerates one cluster's candidates, depth first: each numbered group in suffix
// order takes a node of each run it may use in turn, then the unnumbered group is placed.
type search struct {
	e     *evaluator
	c     *framework.ClusterInfo
	runs  []inventory.NodeRun
	alloc *inventory.Allocation
	// resp holds the cluster's candidates, made at the first.
	resp *Response
	// eligible are, per numbered group, the runs whose nodes have its traits and whose taints
	// it tolerates; eligibleU the same for the unnumbered group without its positive traits
	// (those hold for its nodes taken together).
	eligible  [][]int
	eligibleU []int
	used      [][]nodeUse
	// picks are the node (run, position) of each numbered group in the candidate being built.
	picks []nodePick
	// limit is how many candidates the cluster may give; stop ends the search: the cluster
	// has given them, or the query's budget is spent.
	limit int
	stop  bool
	// steps counts the steps of one spread, work those of the cluster not yet added to the
	// query's budget.
	steps int
	work  int64
	// traits are the traits of the cluster's shapes summarized so far.
	traits []shapeTraits
}

type shapeTraits struct {
	shape  string
	traits []string
}

type nodePick struct{ run, pos int }

// reset makes s search cluster c, whose free nodes are alloc's, reusing its buffers.
func (s *search) reset(c *framework.ClusterInfo, alloc *inventory.Allocation) {
	e := s.e
	s.c, s.stop, s.traits, s.work = c, false, s.traits[:0], 0
	s.runs = alloc.AppendFreeNodes(s.runs[:0])
	s.charge(runCost * int64(len(s.runs)))
	s.used = slices.Grow(s.used[:0], len(s.runs))[:len(s.runs)]
	for i := range s.used {
		s.used[i] = s.used[i][:0]
	}
	s.picks = slices.Grow(s.picks[:0], len(e.numbered))[:len(e.numbered)]
	s.eligible = slices.Grow(s.eligible[:0], len(e.numbered))[:len(e.numbered)]
	// A run without room for a group before anything is taken never has room for it, and
	// comparing amounts is cheaper than matching labels, so amounts go first.
	for k, g := range e.numbered {
		s.charge(int64(len(s.runs)) * g.cost)
		s.eligible[k] = s.eligible[k][:0]
		for ri := range s.runs {
			r := &s.runs[ri]
			if s.room(ri, 0, g.Resources) && g.tolerate.Tolerates(r.Taints) && hasTraits(g.Group, r.Labels) {
				s.eligible[k] = append(s.eligible[k], ri)
			}
		}
	}
	s.eligibleU = s.eligibleU[:0]
	if g := e.unnumbered; g != nil {
		s.charge(int64(len(s.runs)) * g.cost)
		for ri := range s.runs {
			r := &s.runs[ri]
			if s.roomForSome(ri, g.Resources) && g.tolerate.Tolerates(r.Taints) && lacksForbidden(g.Group, r.Labels) {
				s.eligibleU = append(s.eligibleU, ri)
			}
		}
	}
}

// hasTraits reports whether the nodes with the given labels, taken together, meet the group's
// traits: each required trait is met by one of them (a forbidden one by all of them) and each
// in: list by one of them. For one node that is the node meeting them all.
func hasTraits(g *Group, labels ...map[string]string) bool {
	for _, t := range g.Required {
		if t.Forbidden {
			for _, l := range labels {
				if !t.sel.MatchesLabels(l) {
					return false
				}
			}
			continue
		}
		if !slices.ContainsFunc(labels, t.sel.MatchesLabels) {
			return false
		}
	}
	for _, anyOf := range g.AnyOf {
		if !slices.ContainsFunc(anyOf, func(t Trait) bool { return slices.ContainsFunc(labels, t.sel.MatchesLabels) }) {
			return false
		}
	}
	return true
}

func lacksForbidden(g *Group, labels map[string]string) bool {
	for _, t := range g.Required {
		if t.Forbidden && !t.sel.MatchesLabels(labels) {
			return false
		}
	}
	return true
}

// room reports whether node pos of run ri (pos may be the next untouched one) has res free
// besides what the candidate already takes there.
func (s *search) room(ri, pos int, res []Resource) bool {
	r := &s.runs[ri]
	var taken []inventory.Amount
	if pos < len(s.used[ri]) {
		taken = s.used[ri][pos].taken
	} else if int64(pos) >= r.Count {
		return false
	}
	for _, a := range res {
		if r.Free(a.Name)-takenOf(taken, a.Name) < a.Milli {
			return false
		}
	}
	return true
}

// roomForSome reports whether a node of run ri has room for one of res, before anything is
// taken.
func (s *search) roomForSome(ri int, res []Resource) bool {
	for j := range res {
		if s.room(ri, 0, res[j:j+1]) {
			return true
		}
	}
	return false
}

// pickNode returns the node of run ri a group takes res from: the first node the candidate
// already uses that has room for it (under isolate, for a numbered group, only nodes no other
// numbered group uses), else the run's next untouched node.
func (s *search) pickNode(ri int, res []Resource, numbered bool) (int, bool) {
	isolate := numbered && s.e.q.GroupPolicy == PolicyIsolate
	for pos := range s.used[ri] {
		if isolate && s.used[ri][pos].numbered > 0 {
			continue
		}
		if s.room(ri, pos, res) {
			return pos, true
		}
	}
	pos := len(s.used[ri])
	return pos, s.room(ri, pos, res)
}

// takenOf returns how much of name a candidate takes from a node.
func takenOf(taken []inventory.Amount, name corev1.ResourceName) int64 {
	for _, t := range taken {
		if t.Name == name {
			return t.Milli
		}
	}
	return 0
}

func addTaken(taken []inventory.Amount, name corev1.ResourceName, milli int64) []inventory.Amount {
	for i := range taken {
		if taken[i].Name == name {
			taken[i].Milli += milli
			return taken
		}
	}
	return append(taken, inventory.Amount{Name: name, Milli: milli})
}

func (s *search) take(ri, pos int, res []Resource, numbered bool) {
	if pos == len(s.used[ri]) {
		// A node the search left keeps its buffer for the next one.
		if pos < cap(s.used[ri]) {
			s.used[ri] = s.used[ri][:pos+1]
			s.used[ri][pos] = nodeUse{taken: s.used[ri][pos].taken[:0]}
		} else {
			s.used[ri] = append(s.used[ri], nodeUse{})
		}
	}
	u := &s.used[ri][pos]
	for _, a := range res {
		u.taken = addTaken(u.taken, a.Name, a.Milli)
	}
	u.groups++
	if numbered {
		u.numbered++
	}
}

// untake undoes take; the search undoes in reverse order, so a node left empty is the last.
func (s *search) untake(ri, pos int, res []Resource, numbered bool) {
	u := &s.used[ri][pos]
	for _, a := range res {
		u.taken = addTaken(u.taken, a.Name, -a.Milli)
	}
	u.groups--
	if numbered {
		u.numbered--
	}
	if u.groups == 0 && pos == len(s.used[ri])-1 {
		u.taken = u.taken[:0]
		s.used[ri] = s.used[ri][:pos]
	}
}

// charge counts steps of work, and stops the search when the query's budget is spent or its
// context has ended.
func (s *search) charge(steps int64) {
	if s.work += steps; s.work >= flushEvery {
		s.flush()
	}
}

// flush adds the steps counted so far to the query's budget.
func (s *search) flush() {
	if !s.e.budget.add(s.work) {
		s.stop = true
	}
	s.work = 0
}

func (s *search) numbered(k int) {
	if s.stop {
		return
	}
	if k == len(s.e.numbered) {
		s.placeUnnumbered()
		return
	}
	g := s.e.numbered[k]
	for _, ri := range s.eligible[k] {
		if s.charge(tryCost * g.cost); s.stop {
			return
		}
		pos, ok := s.pickNode(ri, g.Resources, true)
		if !ok {
			continue
		}
		s.take(ri, pos, g.Resources, true)
		s.picks[k] = nodePick{ri, pos}
		s.numbered(k + 1)
		s.untake(ri, pos, g.Resources, true)
		if s.stop {
			return
		}
	}
}

// placeUnnumbered gives one candidate per node that can take the whole unnumbered group; only
// when none can does it spread the group's classes over several nodes, and then gives the
// first spread found.
func (s *search) placeUnnumbered() {
	g := s.e.unnumbered
	if g == nil {
		s.emit(nil)
		return
	}
	found := false
	for _, ri := range s.eligibleU {
		if s.charge(g.cost); s.stop {
			return
		}
		if !hasTraits(g.Group, s.runs[ri].Labels) {
			continue
		}
		pos, ok := s.pickNode(ri, g.Resources, false)
		if !ok {
			continue
		}
		found = true
		s.take(ri, pos, g.Resources, false)
		picks := make([]nodePick, len(g.Resources))
		for j := range picks {
			picks[j] = nodePick{ri, pos}
		}
		s.emit(picks)
		s.untake(ri, pos, g.Resources, false)
		if s.stop {
			return
		}
	}
	if found || len(g.Resources) < 2 {
		return
	}
	s.steps = 0
	s.spread(make([]nodePick, 0, len(g.Resources)))
}

// spread places the unnumbered group's classes one at a time, each whole on one node, and
// emits the first placement whose nodes together have the group's traits.
func (s *search) spread(picks []nodePick) bool {
	g := s.e.unnumbered
	j := len(picks)
	if j == len(g.Resources) {
		labels := make([]map[string]string, len(picks))
		for i, p := range picks {
			labels[i] = s.runs[p.run].Labels
		}
		if !hasTraits(g.Group, labels...) {
			return false
		}
		s.emit(picks)
		return true
	}
	one := g.Resources[j : j+1]
	for _, ri := range s.eligibleU {
		if s.steps++; s.steps > maxSpreadSteps {
			return true
		}
		if s.charge(1); s.stop {
			return true
		}
		pos, ok := s.pickNode(ri, one, false)
		if !ok {
			continue
		}
		s.take(ri, pos, one, false)
		done := s.spread(append(picks, nodePick{ri, pos}))
		s.untake(ri, pos, one, false)
		if done {
			return true
		}
	}
	return false
}

// emit records the candidate being built: the numbered groups' picks and, for the unnumbered
// group, the node of each of its resources.
func (s *search) emit(unnumbered []nodePick) {
	if s.resp == nil {
		s.resp = &Response{ProviderSummaries: map[string]*ProviderSummary{}}
	}
	s.charge(emitCost * int64(1+len(s.e.q.Groups)))
	cluster := s.c.Name()
	ar := AllocationRequest{Allocations: map[string]Allocation{}, Mappings: map[string][]string{}, cluster: cluster}
	add := func(p nodePick, r Resource) string {
		id := s.nodeID(p)
		a, ok := ar.Allocations[id]
		if !ok {
			a = Allocation{Resources: map[corev1.ResourceName]resource.Quantity{}}
			ar.Allocations[id] = a
			s.summarize(id, p)
		}
		if q, ok := a.Resources[r.Name]; ok {
			a.Resources[r.Name] = quantity(r.Name, inventory.MilliOf(q)+r.Milli)
		} else {
			a.Resources[r.Name] = quantity(r.Name, r.Milli)
		}
		return id
	}
	place := func(suffix string, res []Resource, picks []nodePick) {
		gp := groupPlacement{suffix: suffix, amount: res}
		for j, r := range res {
			id := add(picks[j], r)
			gp.nodes = append(gp.nodes, id)
			if !slices.Contains(ar.Mappings[suffix], id) {
				ar.Mappings[suffix] = append(ar.Mappings[suffix], id)
			}
		}
		ar.groups = append(ar.groups, gp)
	}
	if g := s.e.unnumbered; g != nil {
		place("", g.Resources, unnumbered)
	}
	for k, g := range s.e.numbered {
		picks := make([]nodePick, len(g.Resources))
		for j := range picks {
			picks[j] = s.picks[k]
		}
		place(g.Suffix, g.Resources, picks)
	}
	if _, ok := s.resp.ProviderSummaries[cluster]; !ok {
		s.resp.ProviderSummaries[cluster] = &ProviderSummary{
			Resources: map[corev1.ResourceName]ResourceSummary{}, Traits: []string{}, RootProviderUUID: cluster,
		}
	}
	s.resp.AllocationRequests = append(s.resp.AllocationRequests, ar)
	if len(s.resp.AllocationRequests) >= s.limit {
		s.stop = true
	}
}

// nodeID is "<cluster>/<shape>/<i>": the hub knows shapes, not node names, and i numbers the
// shape's nodes in the order of its free vectors (after in-flight reservations).
func (s *search) nodeID(p nodePick) string {
	r := &s.runs[p.run]
	return s.c.Name() + "/" + r.Shape + "/" + strconv.FormatInt(r.First+int64(p.pos), 10)
}

// summarize adds a node's provider summary: its shape's allocatable as capacity, and as used
// what is not free on it.
func (s *search) summarize(id string, p nodePick) {
	if _, ok := s.resp.ProviderSummaries[id]; ok {
		return
	}
	r := &s.runs[p.run]
	cluster := s.c.Name()
	sum := &ProviderSummary{Resources: map[corev1.ResourceName]ResourceSummary{}, ParentProviderUUID: &cluster, RootProviderUUID: cluster}
	if alloc := s.allocatable(r.Shape); alloc != nil {
		for name, q := range *alloc {
			capMilli := inventory.MilliOf(q)
			sum.Resources[name] = ResourceSummary{Capacity: quantity(name, capMilli), Used: quantity(name, max(0, capMilli-r.Free(name)))}
		}
	}
	sum.Traits = s.traitsOf(r)
	s.resp.ProviderSummaries[id] = sum
}

// traitsOf returns a node's reported labels as sorted key=value traits, computed once per
// shape of the cluster and shared by its summaries, which are read-only. Shape names are only
// unique within a cluster's report, so nothing is shared across clusters.
func (s *search) traitsOf(r *inventory.NodeRun) []string {
	for _, c := range s.traits {
		if c.shape == r.Shape {
			return c.traits
		}
	}
	t := make([]string, 0, len(r.Labels))
	for k, v := range r.Labels {
		t = append(t, k+"="+v)
	}
	slices.Sort(t)
	s.traits = append(s.traits, shapeTraits{shape: r.Shape, traits: t})
	return t
}

func (s *search) allocatable(shape string) *corev1.ResourceList {
	shapes := s.c.Inventory.Status.NodeShapes
	for i := range shapes {
		if shapes[i].Name == shape {
			return &shapes[i].Allocatable
		}
	}
	return nil
}

// quantity renders a milli-amount as Kubernetes writes it: bytes in binary units.
func quantity(name corev1.ResourceName, milli int64) resource.Quantity {
	format := resource.DecimalSI
	n := string(name)
	if name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || name == corev1.ResourceStorage ||
		strings.HasPrefix(n, corev1.ResourceHugePagesPrefix) {
		format = resource.BinarySI
	}
	if milli%1000 == 0 {
		return *resource.NewQuantity(milli/1000, format)
	}
	return *resource.NewMilliQuantity(milli, format)
}
