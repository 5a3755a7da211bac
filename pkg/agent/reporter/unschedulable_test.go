package reporter

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// pendingPod is a pod of the intent team-a/<intent> that kube-scheduler could not place at
// since with message.
func pendingPod(name, intent, message string, since time.Time) *corev1.Pod {
	p := pod(name, "", "1")
	p.Labels = map[string]string{v1alpha1.LabelIntentNamespace: "team-a", v1alpha1.LabelIntentName: intent}
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: message, LastTransitionTime: metav1.NewTime(since),
	}}}
	return p
}

// TestReportsUnschedulable checks, with a fake clock, that the first report lists the
// delivered pods that wait for a node, that a sync with the same pods writes nothing, and
// that a change of their message or their binding is written at the next interval.
func TestReportsUnschedulable(t *testing.T) {
	const cluster = "cluster1"
	minInterval := 5 * time.Second
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	since := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Minute))
	const noGPU = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu."

	spoke := k8sfake.NewClientset(node("n1", "16", ""), pod("local", "n1", "1"),
		pendingPod("trainer-0", "trainer", noGPU, since.Time), pendingPod("trainer-1", "trainer", noGPU, since.Time.Add(time.Second)),
		pendingPod("web-0", "web", "0/1 nodes are available: 1 node(s) had untolerated taint.", since.Time))
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
	var writes, reports atomic.Int32
	hub.PrependReactor("update", "clusterinventories", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			writes.Add(1)
		}
		return false, nil, nil
	})
	c, err := New(Clients{Spoke: spoke, Hub: hub, HubCluster: clusterfake.NewSimpleClientset()}, Options{
		ClusterName: cluster, Inventory: inventory.DefaultConfig(), MinInterval: minInterval, Clock: clock,
		OnReport: func(*v1alpha1.ClusterInventoryStatus) { reports.Add(1) },
	})
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
	inventoryOnHub := func() *v1alpha1.ClusterInventory {
		t.Helper()
		inv, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}

	// seen waits until the reporter's cache of unscheduled pods holds p as it is, so that the
	// clock steps only once its event asked for a sync.
	seen := func(p *corev1.Pod) {
		t.Helper()
		poll(t, "the informer to deliver "+p.Name, func() bool {
			got, err := c.unschedulable.lister.Pods(p.Namespace).Get(p.Name)
			return err == nil && cmp.Equal(got.Status, p.Status) && got.Spec.NodeName == p.Spec.NodeName
		})
	}

	poll(t, "the first write", func() bool { return writes.Load() == 1 })
	poll(t, "the spoke's watches", func() bool { return watches.Load() == spokeWatches })
	want := []v1alpha1.UnschedulableWorkload{
		{IntentNamespace: "team-a", IntentName: "trainer", PodCount: 2, Since: since, Message: noGPU},
		{IntentNamespace: "team-a", IntentName: "web", PodCount: 1, Since: since, Message: "0/1 nodes are available: 1 node(s) had untolerated taint."},
	}
	if diff := cmp.Diff(want, inventoryOnHub().Status.Unschedulable); diff != "" {
		t.Fatalf("the first report's unschedulable (-want,+got):\n%s", diff)
	}

	// A bound pod's label changes: the reporter syncs, and the same summary writes nothing.
	local, err := spoke.CoreV1().Pods("default").Get(ctx, "local", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	local.Labels = map[string]string{"touched": "yes"}
	if _, err := spoke.CoreV1().Pods("default").Update(ctx, local, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Step(minInterval)
	poll(t, "a second report", func() bool { return reports.Load() == 2 })
	if got := writes.Load(); got != 1 {
		t.Errorf("writes after a sync with the same pods: %d, want 1", got)
	}

	// The scheduler words another reason: written at the next interval, a new revision.
	web := pendingPod("web-0", "web", "0/2 nodes are available: 2 Insufficient cpu.", since.Time)
	if _, err := spoke.CoreV1().Pods("default").UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen(web)
	clock.Step(minInterval)
	poll(t, "the new message written", func() bool { return writes.Load() == 2 })
	want[1].Message = "0/2 nodes are available: 2 Insufficient cpu."
	inv := inventoryOnHub()
	if diff := cmp.Diff(want, inv.Status.Unschedulable); diff != "" || inv.Status.Revision != 2 {
		t.Errorf("after a new message: revision %d, want 2; unschedulable (-want,+got):\n%s", inv.Status.Revision, diff)
	}

	// One trainer pod is bound: the count drops (and the bound pod takes its room).
	bound := pod("trainer-0", "n1", "1")
	bound.Labels = map[string]string{v1alpha1.LabelIntentNamespace: "team-a", v1alpha1.LabelIntentName: "trainer"}
	bound.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
	if _, err := spoke.CoreV1().Pods("default").Update(ctx, bound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	seen(bound)
	clock.Step(minInterval)
	poll(t, "the binding written", func() bool { return writes.Load() == 3 })
	want[0].PodCount, want[0].Since = 1, metav1.NewTime(since.Time.Add(time.Second))
	if diff := cmp.Diff(want, inventoryOnHub().Status.Unschedulable); diff != "" {
		t.Errorf("after a binding, unschedulable (-want,+got):\n%s", diff)
	}
}
