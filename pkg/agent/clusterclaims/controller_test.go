package clusterclaims

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/inventory"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestControllerRateLimitAndOwnership checks, with a fake clock, that claims are written at
// once the first time and then at most once per MinInterval, however many reports come in
// between; that the agent's stale claims are removed; and that others' claims, one of them
// named like one of the agent's, are never touched.
func TestControllerRateLimitAndOwnership(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	foreign := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: "id.k8s.io"}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: "c1"}}
	squatter := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: GPUProductsClaim}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: "mine"}}
	stale := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: "gone.node.fleetfit.io", Labels: map[string]string{ManagedByLabel: ManagedBy}},
		Spec: clusterv1alpha1.ClusterClaimSpec{Value: "true"}}
	client := clusterfake.NewSimpleClientset(foreign, squatter, stale)
	var writes atomic.Int32
	client.PrependReactor("*", "clusterclaims", func(a clienttesting.Action) (bool, runtime.Object, error) {
		switch a.GetVerb() {
		case "create":
			// The attempts at the squatter's name fail; they write nothing.
			if a.(clienttesting.CreateAction).GetObject().(*clusterv1alpha1.ClusterClaim).Name != GPUProductsClaim {
				writes.Add(1)
			}
		case "update", "delete":
			writes.Add(1)
		}
		return false, nil, nil
	})
	minInterval := 30 * time.Second
	c, err := New(client, Options{MinInterval: minInterval, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})

	nodes := fleetNodes()
	c.Observe(report(t, inventory.DefaultConfig(), nodes...))
	want := Desired(report(t, inventory.DefaultConfig(), nodes...), DefaultClaims)
	poll(t, "the first claims", func() bool { return sameClaims(t, client, want) })
	first := writes.Load()

	// A burst of changes within the interval is written once, when it has passed.
	for i := range 3 {
		nodes = append(nodes, ut.MakeNode("extra-"+string(rune('a'+i))).Resource("cpu", "4").Obj())
		c.Observe(report(t, inventory.DefaultConfig(), nodes...))
	}
	want = Desired(report(t, inventory.DefaultConfig(), nodes...), DefaultClaims)
	time.Sleep(200 * time.Millisecond) // time for a write that must not happen
	if got := writes.Load(); got != first {
		t.Fatalf("writes before the interval passed: %d, want %d", got, first)
	}
	clock.Step(minInterval)
	poll(t, "the coalesced claims", func() bool { return sameClaims(t, client, want) })
	// node-count and resources changed: two updates.
	if got := writes.Load() - first; got != 2 {
		t.Errorf("writes of the coalesced change: %d, want 2", got)
	}

	// Others' claims are as they were, and the stale one is gone.
	for _, o := range []*clusterv1alpha1.ClusterClaim{foreign, squatter} {
		got, err := client.ClusterV1alpha1().ClusterClaims().Get(ctx, o.Name, metav1.GetOptions{})
		if err != nil || got.Spec.Value != o.Spec.Value || got.Labels[ManagedByLabel] != "" {
			t.Errorf("claim %s: %v, %v; want it untouched", o.Name, got, err)
		}
	}
	if _, err := client.ClusterV1alpha1().ClusterClaims().Get(ctx, stale.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("the stale claim %s is still there", stale.Name)
	}
}

// sameClaims reports whether the agent's claims on the cluster are want, leaving out the
// one another owner holds.
func sameClaims(t *testing.T, client *clusterfake.Clientset, want []Claim) bool {
	list, err := client.ClusterV1alpha1().ClusterClaims().List(t.Context(), metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedBy})
	if err != nil {
		t.Fatal(err)
	}
	var got, expected []Claim
	for _, c := range list.Items {
		got = append(got, Claim{Name: c.Name, Value: c.Spec.Value})
	}
	for _, c := range want {
		if c.Name != GPUProductsClaim {
			expected = append(expected, c)
		}
	}
	return cmp.Equal(expected, got)
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
