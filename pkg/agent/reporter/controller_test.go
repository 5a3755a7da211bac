package reporter

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"

	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

const waitTimeout = 30 * time.Second

// spokeWatches is how many watches a reporter opens on the spoke: nodes, bound pods, and the
// delivered pods that wait for a node.
const spokeWatches = 3

// poll waits for cond, failing the test after waitTimeout.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// TestMinIntervalCoalesces checks, with a fake clock, that a burst of pod
// events within MinInterval of a write costs exactly one more write, made
// when the interval has passed. The clients are fakes because only the
// controller's timing is under test; what reaches a real hub is tested in
// test/integration/agent.
func TestMinIntervalCoalesces(t *testing.T) {
	const cluster = "cluster1"
	minInterval := 5 * time.Second
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))

	spoke := k8sfake.NewClientset(node("n1", "16", ""))
	// The fake API server drops events between an informer's list and its
	// watch; count the watches so that pods are created only after both.
	var watches atomic.Int32
	spoke.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := spoke.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		watches.Add(1)
		return true, w, nil
	})
	hub := fleetfitfake.NewSimpleClientset()
	var writes atomic.Int32
	hub.PrependReactor("update", "clusterinventories", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			writes.Add(1)
		}
		return false, nil, nil
	})
	hubCluster := clusterfake.NewSimpleClientset()

	c, err := New(Clients{Spoke: spoke, Hub: hub, HubCluster: hubCluster},
		Options{ClusterName: cluster, Inventory: inventory.DefaultConfig(), MinInterval: minInterval, Clock: clock})
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

	poll(t, "the first write", func() bool { return writes.Load() == 1 })
	poll(t, "the spoke's watches", func() bool { return watches.Load() == spokeWatches })
	for i := range 5 {
		if _, err := spoke.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("p%d", i), "n1", "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	poll(t, "the informer to deliver the pods", func() bool {
		n, ok := c.cluster.Node("n1")
		return ok && n.Pods == 5
	})
	// With the clock stopped, the pending sync cannot be due yet.
	if got := writes.Load(); got != 1 {
		t.Fatalf("writes before MinInterval passed: %d, want 1", got)
	}

	clock.Step(minInterval)
	poll(t, "the coalesced write", func() bool { return writes.Load() == 2 })
	inv, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var requested resource.Quantity
	for _, r := range inv.Status.Resources {
		if r.Name == corev1.ResourceCPU {
			requested = r.Requested
		}
	}
	if requested.Cmp(resource.MustParse("5")) != 0 || inv.Status.Revision != 2 {
		t.Errorf("after the coalesced write: requested cpu %s, revision %d; want 5, 2", requested.String(), inv.Status.Revision)
	}

	// Nothing changes on the spoke, but the score must be renewed before it
	// expires, and the inventory's observedAt moved on so that the hub does not
	// take it for stale: the unchanged inventory is written again, with its
	// revision kept. The inventory step runs before the score step, so once the
	// renewed score is seen, the inventory step of that sync has decided.
	// The sync that wrote schedules the renewal on the fake clock after its writes: step
	// the clock only once it has, or the renewal would wait from the stepped time.
	poll(t, "the coalesced sync to schedule its renewal", func() bool { return c.syncsDone.Load() >= 2 })
	clock.Step(DefaultScoreValidity / 2)
	wantValidUntil := clock.Now().Add(DefaultScoreValidity)
	poll(t, "the renewed score", func() bool {
		s, err := hubCluster.ClusterV1alpha1().AddOnPlacementScores(cluster).Get(ctx, ScoreName, metav1.GetOptions{})
		return err == nil && s.Status.ValidUntil != nil && s.Status.ValidUntil.Time.Equal(wantValidUntil)
	})
	if got := writes.Load(); got != 3 {
		t.Errorf("inventory writes after a heartbeat: %d, want 3", got)
	}
	inv, err = hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !inv.Status.ObservedAt.Time.Equal(clock.Now()) || inv.Status.Revision != 2 {
		t.Errorf("after a heartbeat: observedAt %v, revision %d; want %v, 2", inv.Status.ObservedAt.Time, inv.Status.Revision, clock.Now())
	}
	if age := clock.Now().Sub(inv.Status.ObservedAt.Time); age >= framework.InventoryStaleAfter {
		t.Errorf("the inventory is %v old, which the hub takes for stale", age)
	}

	// An inventory deleted on the hub is written again at the next renewal,
	// with the revision starting over.
	if err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Delete(ctx, cluster, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the renewal to schedule the next", func() bool { return c.syncsDone.Load() >= 3 })
	clock.Step(DefaultScoreValidity / 2)
	poll(t, "the inventory to be recreated", func() bool {
		inv, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		return err == nil && inv.Status.Revision == 1 && inv.Status.NodeCount == 1
	})
}
