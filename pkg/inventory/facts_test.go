package inventory

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// legacyShapeKey is the shape key as first written, with string
// concatenation; shape names are hashes of it, so the key must not change.
func legacyShapeKey(f *nodeFacts) string {
	var b strings.Builder
	if f.schedulable {
		b.WriteString("S")
	} else {
		b.WriteString("U")
	}
	b.WriteByte(1)
	for _, t := range f.taints {
		b.WriteString(t.Key + "\x00" + t.Value + "\x00" + string(t.Effect) + "\x02")
	}
	b.WriteByte(1)
	keys := make([]string, 0, len(f.features))
	for k := range f.features {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(k + "\x00" + f.features[k] + "\x02")
	}
	b.WriteByte(1)
	for _, a := range f.allocatable {
		b.WriteString(string(a.Name) + "\x00" + strconv.FormatInt(a.Milli, 10) + "\x02")
	}
	return b.String()
}

// TestNodeFactsAndCache checks facts built from scratch space against the
// nodes they come from, the shape key against its original encoding, and
// that the cache hands out facts equal to fresh ones.
func TestNodeFactsAndCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	nodes, _ := randomFleet(rng, 400)
	for i, n := range nodes {
		if rng.IntN(3) == 0 {
			n.Spec.Taints = append(n.Spec.Taints,
				corev1.Taint{Key: "a", Value: "b", Effect: corev1.TaintEffectNoExecute},
				corev1.Taint{Key: "a", Value: "", Effect: corev1.TaintEffectNoSchedule},
				corev1.Taint{Key: "a", Effect: corev1.TaintEffectNoExecute})
			rng.Shuffle(len(n.Spec.Taints), func(i, j int) { n.Spec.Taints[i], n.Spec.Taints[j] = n.Spec.Taints[j], n.Spec.Taints[i] })
		}
		if i%7 == 0 {
			n.Status.Capacity = rl("cpu", strconv.Itoa(1+rng.IntN(3)), "memory", "1Gi")
		}
	}
	prefixes := newLabelFilter(DefaultConfig().FeatureLabelPrefixes, nil)
	cache := map[string]*nodeFacts{}
	var b factsBuilder
	allow := cmp.AllowUnexported(nodeFacts{})
	for _, n := range nodes {
		want := &nodeFacts{
			ready:       isReady(n),
			schedulable: isReady(n) && !n.Spec.Unschedulable,
			taints:      normalizeTaints(n.Spec.Taints),
			features:    featureLabels(n.Labels, &prefixes),
			capacity:    NewVector(n.Status.Capacity),
			allocatable: NewVector(n.Status.Allocatable),
		}
		want.shapeKey = legacyShapeKey(want)
		if got := newNodeFacts(n, &prefixes); !cmp.Equal(want, got, allow) {
			t.Fatalf("node %s: facts differ (-want,+got):\n%s", n.Name, cmp.Diff(want, got, allow))
		}
		if got := shapeKeyOf(want); got != want.shapeKey {
			t.Fatalf("node %s: shapeKeyOf = %q, want %q", n.Name, got, want.shapeKey)
		}
		b.read(n, &prefixes, nil)
		if got := b.cachedFacts(cache, 50); !cmp.Equal(want, got, allow) {
			t.Fatalf("node %s: cached facts differ (-want,+got):\n%s", n.Name, cmp.Diff(want, got, allow))
		}
		if len(cache) > 50 {
			t.Fatalf("the cache holds %d facts, more than its limit", len(cache))
		}
	}
	for i := 1; i < len(nodes); i++ {
		if !slices.IsSortedFunc(normalizeTaints(nodes[i].Spec.Taints), compareTaints) {
			t.Fatal("normalizeTaints does not sort")
		}
	}
}

// TestRequestedIsNotShared checks that the vectors a node's requests are
// added to in place leak neither into NodeInfo nor into pods' requests.
func TestRequestedIsNotShared(t *testing.T) {
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.UpsertNode(makeNode("n").Resources("cpu", "8", "memory", "8Gi", "pods", "10").Obj())
	c.UpsertNode(makeNode("m").Resources("cpu", "8", "memory", "8Gi", "pods", "10").Obj())
	c.UpsertPod(makePod("a", "n").Container("cpu", "1").Obj())
	c.UpsertPod(makePod("b", "m").Container("cpu", "1").Obj()) // shares a's interned requests
	info, _ := c.Node("n")
	info.Requested[0].Milli = 999
	c.UpsertPod(makePod("c", "n").Container("cpu", "2", "memory", "1Gi").Obj())
	c.Summarize()
	c.UpsertPod(makePod("d", "n").Container("cpu", "1").Obj())
	for name, want := range map[string]Vector{
		"n": vec("cpu", "4", "memory", "1Gi", "pods", "3"),
		"m": vec("cpu", "1", "pods", "1"),
	} {
		info, _ := c.Node(name)
		if diff := cmp.Diff(want, info.Requested); diff != "" {
			t.Errorf("node %s requested (-want,+got):\n%s", name, diff)
		}
	}
	c.DeletePod("default", "c")
	c.DeletePod("default", "a")
	info, _ = c.Node("n")
	if diff := cmp.Diff(vec("cpu", "1", "pods", "1"), info.Requested); diff != "" {
		t.Errorf("node n requested after deletes (-want,+got):\n%s", diff)
	}
	if got := PodRequests(makePod("x", "n").Container("cpu", "1").Obj()); !got.Equal(vec("cpu", "1", "pods", "1")) {
		t.Errorf("PodRequests = %v after in-place updates", got)
	}
}
