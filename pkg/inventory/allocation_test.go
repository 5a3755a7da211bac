package inventory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// step is one demand of an allocation test: replicas of a request.
type step struct {
	resources   corev1.ResourceList
	features    []corev1.NodeSelectorRequirement
	tolerations []corev1.Toleration
	replicas    int64
}

func (s step) request(t testing.TB) *Request {
	t.Helper()
	return mustRequest(t, s.resources, s.features, s.tolerations...)
}

func TestAllocationPlace(t *testing.T) {
	eight := makeNode("").Resources("cpu", "8", "memory", "32Gi", "pods", "110")
	sixteen := makeNode("").Resources("cpu", "16", "memory", "64Gi", "pods", "110")
	gpu := func(product string) *nodeWrapper {
		return makeNode("").Resources("cpu", "8", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4").
			Label("nvidia.com/gpu.product", product)
	}
	a100 := []corev1.NodeSelectorRequirement{req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "A100")}
	dedicated := corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}

	cases := map[string]struct {
		nodes []*corev1.Node
		pods  []*corev1.Pod
		steps []step
		want  []int64 // placed per step, in order
	}{
		"ten 8-cpu nodes cannot take a 12-cpu replica": {
			nodes: nodes(10, "small", eight),
			steps: []step{{resources: rl("cpu", "12"), replicas: 3}},
			want:  []int64{0},
		},
		"two 16-cpu nodes take two 12-cpu replicas, then no more": {
			nodes: nodes(2, "big", sixteen),
			steps: []step{{resources: rl("cpu", "12"), replicas: 5}, {resources: rl("cpu", "12"), replicas: 1}},
			want:  []int64{2, 0},
		},
		"5-cpu replicas go one per 8-cpu node, leaving 3 cpu on each": {
			nodes: nodes(10, "small", eight),
			steps: []step{
				{resources: rl("cpu", "5"), replicas: 20},
				{resources: rl("cpu", "3"), replicas: 20},
				{resources: rl("cpu", "1m"), replicas: 1},
			},
			want: []int64{10, 10, 0},
		},
		"replicas pack while they fit together": {
			nodes: nodes(3, "small", eight),
			steps: []step{{resources: rl("cpu", "2"), replicas: 12}, {resources: rl("cpu", "1m"), replicas: 1}},
			want:  []int64{12, 0},
		},
		"a node with free gpus but no cpu and one with cpu but no gpus take nothing needing both": {
			nodes: []*corev1.Node{
				gpu("A100").Name("gpu").Obj(),
				eight.Clone().Name("cpu").Obj(),
			},
			pods: []*corev1.Pod{makePod("hog", "gpu").Container("cpu", "8").Obj()},
			steps: []step{
				{resources: rl("cpu", "1", "nvidia.com/gpu", "1"), replicas: 1},
				{resources: rl("nvidia.com/gpu", "1"), replicas: 5},
				{resources: rl("cpu", "1"), replicas: 9},
			},
			want: []int64{0, 4, 8},
		},
		"features: only A100 nodes take A100 replicas": {
			nodes: []*corev1.Node{gpu("H100").Name("h").Obj(), gpu("A100").Name("a").Obj()},
			steps: []step{
				{resources: rl("nvidia.com/gpu", "1"), features: a100, replicas: 6},
				{resources: rl("nvidia.com/gpu", "1"), replicas: 6},
			},
			want: []int64{4, 4},
		},
		"taints: untolerated, unschedulable and not-ready nodes take nothing": {
			nodes: []*corev1.Node{
				eight.Clone().Name("tainted").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule).Obj(),
				eight.Clone().Name("cordoned").Cordoned().Obj(),
				eight.Clone().Name("down").NotReady().Obj(),
				eight.Clone().Name("soft").Taint("soft", "", corev1.TaintEffectPreferNoSchedule).Obj(),
			},
			steps: []step{
				{resources: rl("cpu", "8"), replicas: 4},
				{resources: rl("cpu", "8"), replicas: 4},
				{resources: rl("cpu", "8"), tolerations: []corev1.Toleration{dedicated}, replicas: 4},
			},
			want: []int64{1, 0, 1},
		},
		"in the given order a small replica takes the tight node a larger one needed": {
			nodes: []*corev1.Node{
				makeNode("a").Resources("cpu", "6", "memory", "32Gi", "pods", "110").Obj(),
				makeNode("b").Resources("cpu", "4", "memory", "32Gi", "pods", "110").Obj(),
			},
			steps: []step{{resources: rl("cpu", "2"), replicas: 1}, {resources: rl("cpu", "4"), replicas: 2}},
			want:  []int64{1, 1},
		},
		"pod slots count": {
			nodes: nodes(2, "few", makeNode("").Resources("cpu", "8", "pods", "3")),
			pods:  []*corev1.Pod{makePod("p", "few-0").Obj()},
			steps: []step{{resources: rl("cpu", "100m"), replicas: 10}},
			want:  []int64{5},
		},
		"best fit keeps the big node for the big replica": {
			nodes: []*corev1.Node{sixteen.Clone().Name("big").Obj(), eight.Clone().Name("small").Obj()},
			steps: []step{{resources: rl("cpu", "6"), replicas: 1}, {resources: rl("cpu", "14"), replicas: 1}},
			want:  []int64{1, 1},
		},
		"a cpu-only replica leaves the gpu node for a replica that needs both": {
			nodes: []*corev1.Node{gpu("A100").Name("gpu").Obj(), eight.Clone().Name("cpu").Obj()},
			steps: []step{
				{resources: rl("cpu", "6"), replicas: 1},
				{resources: rl("cpu", "6", "nvidia.com/gpu", "1"), replicas: 1},
			},
			want: []int64{1, 1},
		},
		"a request needing nothing fits any number of replicas on a usable node": {
			nodes: nodes(1, "n", makeNode("").Resources("cpu", "1")),
			steps: []step{{resources: rl(), replicas: 1000}, {resources: rl("cpu", "1"), replicas: 2}},
			want:  []int64{1000, 1},
		},
		"no replicas asked, none placed": {
			nodes: nodes(1, "n", eight),
			steps: []step{{resources: rl("cpu", "1"), replicas: 0}, {resources: rl("cpu", "1"), replicas: -3}},
			want:  []int64{0, 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := summarize(t, DefaultConfig(), tc.nodes, tc.pods)
			a := NewView(&st).Allocate()
			var got []int64
			for _, s := range tc.steps {
				got = append(got, a.Place(s.request(t), s.replicas))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placed (-want,+got):\n%s", diff)
			}
		})
	}
}

// viewState is what a View answers, to check that Allocations leave it alone.
func viewState(v *View, rs []*Request) []string {
	var out []string
	for _, r := range rs {
		n, exact := v.MaxReplicas(r)
		fits, why := v.FitsOnOneNode(r)
		out = append(out, fmt.Sprint(n, exact, fits, why))
	}
	return out
}

func TestAllocateLeavesViewAlone(t *testing.T) {
	ns, ps := benchFleet(200, 10)
	st := summarize(t, DefaultConfig(), ns, ps)
	v, pristine := NewView(&st), NewView(&st)
	pristine.Allocate() // computes the same lazily cached scales
	rs := []*Request{
		mustRequest(t, rl("cpu", "4", "memory", "8Gi"), nil),
		mustRequest(t, rl("cpu", "2", "nvidia.com/gpu", "1"), nil),
	}
	before := viewState(v, rs)

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			a := v.Allocate()
			for i := range 20 {
				a.Place(rs[(g+i)%len(rs)], int64(1+i))
				a.Place(rs[0], 3)
				a.Place(rs[1], 1000)
			}
		})
	}
	wg.Wait()

	if diff := cmp.Diff(pristine, v, cmp.AllowUnexported(View{}, viewShape{}, viewVector{}, packing{}, labelFilter{}),
		cmpopts.IgnoreTypes(sync.Once{})); diff != "" {
		t.Errorf("allocations changed the view (-before,+after):\n%s", diff)
	}
	if diff := cmp.Diff(before, viewState(v, rs)); diff != "" {
		t.Errorf("the view's answers changed (-before,+after):\n%s", diff)
	}
	// Two allocations of one view are independent.
	a, b := v.Allocate(), v.Allocate()
	all, _ := v.MaxReplicas(rs[0])
	if got := a.Place(rs[0], all); got != all {
		t.Fatalf("a fresh allocation placed %d of %d", got, all)
	}
	if got := b.Place(rs[0], all); got != all {
		t.Errorf("a second allocation placed %d of %d after the first took everything", got, all)
	}
}

// bruteFeasible reports whether the nodes, seen directly, can take counts[i]
// replicas of each demand together, each replica whole on one node: an
// exhaustive search over how many of each demand every node takes.
func bruteFeasible(ns []bruteNode, demands []bruteDemand, counts []int64) bool {
	memo := map[string]bool{}
	var search func(node int, left []int64) bool
	search = func(node int, left []int64) bool {
		if !slices.ContainsFunc(left, func(n int64) bool { return n > 0 }) {
			return true
		}
		if node == len(ns) {
			return false
		}
		key := fmt.Sprint(node, left)
		if ok, seen := memo[key]; seen {
			return ok
		}
		ok := false
		take := make([]int64, len(left))
		var choose func(d int) bool
		choose = func(d int) bool {
			if d == len(demands) {
				if !demandsFit(ns[node], demands, take) {
					return false
				}
				rest := make([]int64, len(left))
				for i := range left {
					rest[i] = left[i] - take[i]
				}
				return search(node+1, rest)
			}
			for k := int64(0); k <= left[d]; k++ {
				if k > 0 && !demands[d].usable(ns[node]) {
					break
				}
				take[d] = k
				if !demandsFit(ns[node], demands[:d+1], take[:d+1]) {
					break
				}
				if choose(d + 1) {
					return true
				}
			}
			take[d] = 0
			return false
		}
		ok = choose(0)
		memo[key] = ok
		return ok
	}
	return search(0, counts)
}

type bruteDemand struct {
	resources   corev1.ResourceList
	sel         *nodeaffinity.NodeSelector
	tolerations []corev1.Toleration
}

func (d bruteDemand) usable(n bruteNode) bool {
	ready := slices.ContainsFunc(n.node.Status.Conditions, func(c corev1.NodeCondition) bool {
		return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
	})
	if !ready || n.node.Spec.Unschedulable || (d.sel != nil && !d.sel.Match(n.node)) {
		return false
	}
	_, bad := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.node.Spec.Taints, d.tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}, false)
	return !bad
}

// demandsFit reports whether take[i] replicas of each demand fit on n at once.
func demandsFit(n bruteNode, demands []bruteDemand, take []int64) bool {
	used := map[corev1.ResourceName]int64{}
	for i, d := range demands {
		for name, q := range d.resources {
			used[name] += take[i] * q.MilliValue()
		}
		if n.slots {
			used[corev1.ResourcePods] += take[i] * 1000
		}
	}
	for name, u := range used {
		if u > 0 && u > max(n.free[name], 0) {
			return false
		}
	}
	return true
}

func TestAllocationNeverOverClaims(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	featurePool := []corev1.NodeSelectorRequirement{
		req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "A100"),
		req("nvidia.com/gpu.product", corev1.NodeSelectorOpExists),
		req("fleetfit.io/cores", corev1.NodeSelectorOpDoesNotExist),
		req("fleetfit.io/cores", corev1.NodeSelectorOpGt, "8"),
	}
	randomStep := func() (step, bruteDemand) {
		s := step{
			resources: rl("cpu", fmt.Sprintf("%dm", 500*(1+rng.IntN(8))), "memory", fmt.Sprintf("%dMi", 512*rng.IntN(12)),
				"nvidia.com/gpu", fmt.Sprint(rng.IntN(2)*rng.IntN(3))),
			replicas: int64(1 + rng.IntN(4)),
		}
		for _, f := range featurePool {
			if rng.IntN(8) == 0 {
				s.features = append(s.features, f)
			}
		}
		if rng.IntN(2) == 0 {
			s.tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
		}
		d := bruteDemand{resources: s.resources, tolerations: s.tolerations}
		if len(s.features) > 0 {
			var err error
			d.sel, err = nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: s.features}}})
			if err != nil {
				t.Fatal(err)
			}
		}
		return s, d
	}

	var lists, feasibleLists int
	for iter := range 300 {
		cfg := DefaultConfig()
		cfg.MaxFreeVectorsPerShape = []int{1, 2, 16}[rng.IntN(3)]
		nodes, pods := randomFleet(rng, 2+rng.IntN(6))
		st := summarize(t, cfg, nodes, pods)
		v := NewView(&st)
		brute := bruteForce(nodes, pods)

		// One request alone: Place agrees with MaxReplicas.
		single, _ := randomStep()
		r := single.request(t)
		most, _ := v.MaxReplicas(r)
		for _, ask := range []int64{single.replicas, most, most + 1, math.MaxInt64} {
			if got := v.Allocate().Place(r, ask); got != min(ask, most) {
				t.Errorf("iteration %d: Place(%v, %d) = %d, MaxReplicas %d", iter, single.resources, ask, got, most)
			}
		}

		// Several requests in turn: what is placed fits on the real nodes.
		var steps []step
		var demands []bruteDemand
		for range 1 + rng.IntN(3) {
			s, d := randomStep()
			steps, demands = append(steps, s), append(demands, d)
		}
		a := v.Allocate()
		placed := make([]int64, len(steps))
		for i, s := range steps {
			placed[i] = a.Place(s.request(t), s.replicas)
		}
		if !bruteFeasible(brute, demands, placed) {
			t.Errorf("iteration %d: placed %v of %v, more than the nodes take together", iter, placed, describeSteps(steps))
		}

		// How many lists fit on the real nodes, to keep the random cases
		// balanced between lists that fit and lists that do not.
		want := make([]int64, len(steps))
		for i, s := range steps {
			want[i] = s.replicas
		}
		lists++
		if bruteFeasible(brute, demands, want) {
			feasibleLists++
		}
	}
	t.Logf("%d lists, %d fit on the real nodes", lists, feasibleLists)
	if feasibleLists < lists/5 || feasibleLists == lists {
		t.Errorf("the random cases are unbalanced: %d of %d lists fit", feasibleLists, lists)
	}
}

func describeSteps(steps []step) string {
	var parts []string
	for _, s := range steps {
		parts = append(parts, fmt.Sprintf("%d×%v %v", s.replicas, s.resources, s.features))
	}
	return strings.Join(parts, "; ")
}

// BenchmarkAllocatePlace places three consumers in turn on a 5,000-node view, as HardwareFit
// does on each cluster.
func BenchmarkAllocatePlace(b *testing.B) {
	ns, ps := benchFleet(5000, 10)
	st := summarize(b, DefaultConfig(), ns, ps)
	v := NewView(&st)
	a100 := []corev1.NodeSelectorRequirement{req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "A100-SXM4-80GB")}
	steps := []struct {
		request  *Request
		replicas int64
	}{
		{mustRequest(b, rl("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "2"), a100), 4},
		{mustRequest(b, rl("cpu", "8", "memory", "32Gi"), nil), 10},
		{mustRequest(b, rl("cpu", "1", "memory", "1Gi"), nil), 50},
	}
	vectors := 0
	for _, s := range st.NodeShapes {
		vectors += len(s.Free)
	}
	run := func(b *testing.B, next func() *Allocation) {
		b.ReportMetric(float64(len(st.NodeShapes)), "shapes")
		b.ReportMetric(float64(vectors), "free-vectors")
		b.ReportAllocs()
		for b.Loop() {
			a := next()
			for k, s := range steps {
				if placed := a.Place(s.request, s.replicas); placed < s.replicas {
					b.Fatalf("consumer %d did not fit: %d placed", k, placed)
				}
			}
		}
	}
	b.Run("allocate", func(b *testing.B) { run(b, v.Allocate) })
	// A hub worker keeps one Allocation for all its clusters.
	reused := v.Allocate()
	b.Run("reset", func(b *testing.B) { run(b, func() *Allocation { reused.Reset(v); return reused }) })
}
