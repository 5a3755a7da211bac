package allocationcandidates

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// maxSpreadSteps bounds the search for an unnumbered group spread over several nodes of one
// cluster (tried only when no single node can take it): beyond it, the cluster gives no spread
// candidate. It keeps a query with many classes over many shapes from running away.
const maxSpreadSteps = 10000

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
		gp := GroupPlacement{Suffix: suffix, Resources: res}
		for j, r := range res {
			id := add(picks[j], r)
			gp.Nodes = append(gp.Nodes, id)
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

// Quantity is the amount as an answer writes it: bytes in binary units.
func (r Resource) Quantity() resource.Quantity { return quantity(r.Name, r.Milli) }

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
