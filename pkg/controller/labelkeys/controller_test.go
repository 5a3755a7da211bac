package labelkeys

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// intentWith returns an HPAIntent whose one consumer requires each key to exist, and one
// optional feature on optional when it is not empty.
func intentWith(name, optional string, keys ...string) *v1alpha1.HPAIntent {
	c := st.MakeConsumer("c").Target("Deployment", "d", "main")
	for i, k := range keys {
		c.Requirement(st.MakeFeature(fmt.Sprintf("f%d", i), k).Operator(corev1.NodeSelectorOpExists).Obj())
	}
	if optional != "" {
		c.Requirement(st.MakeFeature("opt", optional).Values("x").Optional(1).Obj())
	}
	return st.MakeHPAIntent(name, "ns").Placement("p").Consumer(c.Obj()).Obj()
}

func TestKeys(t *testing.T) {
	many := func(n int, prefix string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%03d", prefix, i)
		}
		return out
	}
	tests := map[string]struct {
		intents     []*v1alpha1.HPAIntent
		want        []string
		wantDropped int
	}{
		"no intents, no keys": {},
		"keys of every intent, optional ones included, sorted, once each": {
			intents: []*v1alpha1.HPAIntent{
				intentWith("a", "example.com/accel", "gpu", "nvidia.com/gpu.product"),
				intentWith("b", "", "gpu", "cores"),
			},
			want: []string{"cores", "example.com/accel", "gpu", "nvidia.com/gpu.product"},
		},
		"invalid keys are left out": {
			intents: []*v1alpha1.HPAIntent{intentWith("a", "", "gpu", "not a key", "-bad")},
			want:    []string{"gpu"},
		},
		"over the limit, keys outside the default prefixes are kept first": {
			intents: []*v1alpha1.HPAIntent{
				intentWith("a", "", many(10, "feature.node.kubernetes.io/f")...),
				intentWith("b", "", many(v1alpha1.MaxLabelKeys, "k")...),
			},
			want:        many(v1alpha1.MaxLabelKeys, "k"),
			wantDropped: 10,
		},
		"over the limit with only keys outside the prefixes, the first in order are kept": {
			intents:     []*v1alpha1.HPAIntent{intentWith("a", "", many(v1alpha1.MaxLabelKeys+3, "k")...)},
			want:        many(v1alpha1.MaxLabelKeys, "k"),
			wantDropped: 3,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, dropped := Keys(tc.intents)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("keys (-want,+got):\n%s", diff)
			}
			if dropped != tc.wantDropped {
				t.Errorf("dropped = %d, want %d", dropped, tc.wantDropped)
			}
		})
	}
}

func inventoryWith(cluster string, keys ...string) *v1alpha1.ClusterInventory {
	inv := &v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: cluster}}
	inv.Spec.LabelKeys = keys
	inv.Status.NodeCount = 3 // the agent's, which the controller must leave alone
	return inv
}

// harness runs the controller's handlers against a fake hub, and processes its queue on demand
// so that a test sees exactly the writes one change causes.
type harness struct {
	t       *testing.T
	ctx     context.Context
	client  *fleetfitfake.Clientset
	factory fleetfitinformers.SharedInformerFactory
	c       *Controller
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	client := fleetfitfake.NewSimpleClientset(objs...)
	factory := fleetfitinformers.NewSharedInformerFactory(client, 0)
	c, err := New(client, factory, Options{})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	// The informers stop with ctx, and Shutdown waits for them.
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	if !toolscache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	t.Cleanup(c.queue.ShutDown)
	return &harness{t: t, ctx: klog.NewContext(ctx, klog.FromContext(ctx)), client: client, factory: factory, c: c}
}

// settle waits until the informers hold what the fake hub holds, then processes the queue
// until it has stayed empty for a while (event handlers run after the informers' stores are
// updated), and returns the patches written meanwhile by inventory name.
func (h *harness) settle() []string {
	h.t.Helper()
	h.client.ClearActions()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.waitForInformers()
		if h.quiet() {
			break
		}
		if time.Now().After(deadline) {
			h.t.Fatal("the queue did not drain")
		}
		key, _ := h.c.queue.Get()
		if err := h.c.sync(h.ctx, key); err != nil {
			h.t.Fatalf("sync %q: %v", key, err)
		}
		h.c.queue.Forget(key)
		h.c.queue.Done(key)
	}
	var patched []string
	for _, a := range h.client.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok {
			patched = append(patched, p.GetNamespace()+"/"+p.GetName())
		}
	}
	slices.Sort(patched)
	return patched
}

// quiet reports whether the queue stays empty for 200ms.
func (h *harness) quiet() bool {
	for range 20 {
		if h.c.queue.Len() > 0 {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// waitForInformers waits until the informers' inventories and intents match the fake's.
func (h *harness) waitForInformers() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		invs, _ := h.client.FleetfitV1alpha1().ClusterInventories("").List(h.ctx, metav1.ListOptions{})
		intents, _ := h.client.FleetfitV1alpha1().HPAIntents("").List(h.ctx, metav1.ListOptions{})
		if h.cached(invs, intents) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	h.t.Fatal("the informers did not catch up")
}

func (h *harness) cached(invs *v1alpha1.ClusterInventoryList, intents *v1alpha1.HPAIntentList) bool {
	for i := range invs.Items {
		got, err := h.c.inventories.ClusterInventories(invs.Items[i].Namespace).Get(invs.Items[i].Name)
		if err != nil || got.ResourceVersion != invs.Items[i].ResourceVersion {
			return false
		}
	}
	cachedIntents, _ := h.factory.Fleetfit().V1alpha1().HPAIntents().Lister().List(everything())
	return len(cachedIntents) == len(intents.Items)
}

func (h *harness) specs() map[string][]string {
	h.t.Helper()
	invs, err := h.client.FleetfitV1alpha1().ClusterInventories("").List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[string][]string{}
	for _, inv := range invs.Items {
		if inv.Name != inv.Namespace {
			if inv.Spec.LabelKeys != nil {
				h.t.Errorf("%s/%s, which is no agent's, was given label keys %v", inv.Namespace, inv.Name, inv.Spec.LabelKeys)
			}
			continue
		}
		out[inv.Name] = inv.Spec.LabelKeys
		if inv.Status.NodeCount != 3 {
			h.t.Errorf("the status of %s changed: nodeCount %d", inv.Name, inv.Status.NodeCount)
		}
	}
	return out
}

// TestController: the keys are computed once per change of the intents, and only the
// inventories whose spec differs are patched.
func TestController(t *testing.T) {
	h := newHarness(t,
		intentWith("a", "", "gpu"),
		inventoryWith("current", "gpu"),
		inventoryWith("stale", "old"),
		inventoryWith("empty"),
		// Not named like its cluster, so not an agent's: never written.
		&v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "empty"}},
	)
	h.c.queue.Add(recomputeKey)
	if diff := cmp.Diff([]string{"empty/empty", "stale/stale"}, h.settle()); diff != "" {
		t.Errorf("patched at start (-want,+got):\n%s", diff)
	}
	want := map[string][]string{"current": {"gpu"}, "stale": {"gpu"}, "empty": {"gpu"}}
	if diff := cmp.Diff(want, h.specs()); diff != "" {
		t.Errorf("label keys (-want,+got):\n%s", diff)
	}

	// Another intent with the same key changes nothing, so nothing is written.
	if _, err := h.client.FleetfitV1alpha1().HPAIntents("ns").Create(h.ctx, intentWith("b", "", "gpu"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := h.settle(); len(got) != 0 {
		t.Errorf("an intent that adds no key patched %v", got)
	}

	// A status write of an intent is not even a recomputation.
	in, err := h.client.FleetfitV1alpha1().HPAIntents("ns").Get(h.ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in.Status.ScheduledPlacement = "p"
	if _, err := h.client.FleetfitV1alpha1().HPAIntents("ns").UpdateStatus(h.ctx, in, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitForInformers()
	if !h.quiet() {
		t.Errorf("a status write queued %d keys", h.c.queue.Len())
	}

	// A new key is written everywhere.
	if _, err := h.client.FleetfitV1alpha1().HPAIntents("ns").Create(h.ctx, intentWith("c", "example.com/accel", "cores"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"current/current", "empty/empty", "stale/stale"}, h.settle()); diff != "" {
		t.Errorf("patched for a new key (-want,+got):\n%s", diff)
	}
	keys := []string{"cores", "example.com/accel", "gpu"}
	want = map[string][]string{"current": keys, "stale": keys, "empty": keys}
	if diff := cmp.Diff(want, h.specs()); diff != "" {
		t.Errorf("label keys (-want,+got):\n%s", diff)
	}

	// An inventory someone changed, or a new one, is put right on its own.
	if _, err := h.client.FleetfitV1alpha1().ClusterInventories("stale").Patch(h.ctx, "stale", "application/merge-patch+json",
		[]byte(`{"spec":{"labelKeys":["x"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.client.FleetfitV1alpha1().ClusterInventories("new").Create(h.ctx, inventoryWith("new"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"new/new", "stale/stale"}, h.settle()); diff != "" {
		t.Errorf("patched after edits (-want,+got):\n%s", diff)
	}

	// Without intents, the keys are removed.
	for _, name := range []string{"a", "b", "c"} {
		if err := h.client.FleetfitV1alpha1().HPAIntents("ns").Delete(h.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := h.settle(); len(got) != 4 {
		t.Errorf("patched %v after the intents went, want all four", got)
	}
	want = map[string][]string{"current": nil, "stale": nil, "empty": nil, "new": nil}
	if diff := cmp.Diff(want, h.specs()); diff != "" {
		t.Errorf("label keys (-want,+got):\n%s", diff)
	}
}

// TestNothingWrittenBeforeTheKeysAreKnown: an inventory event before the first computation
// writes nothing, since an empty set would clear every inventory.
func TestNothingWrittenBeforeTheKeysAreKnown(t *testing.T) {
	h := newHarness(t, intentWith("a", "", "gpu"), inventoryWith("c1", "gpu"), inventoryWith("c2"))
	for h.c.queue.Len() > 0 {
		// The intents ask for a computation; the inventories must wait for it.
		if key, _ := h.c.queue.Get(); key != recomputeKey {
			t.Errorf("inventory %s was queued before the keys were computed", key)
		}
	}
	if err := h.c.sync(h.ctx, "c1/c1"); err != nil {
		t.Fatal(err)
	}
	if got := h.client.Actions(); slices.ContainsFunc(got, func(a clienttesting.Action) bool { return a.GetVerb() == "patch" }) {
		t.Errorf("wrote before the keys were computed: %v", got)
	}
}

func everything() labels.Selector { return labels.Everything() }
