package reporter

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
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

// TestReportsTheLabelKeysTheHubAsksFor: once the hub writes spec.labelKeys, the next report
// (within MinInterval, not a renewal later) has the node labels of those keys and says it
// reports them, and the spec stays the hub's.
func TestReportsTheLabelKeysTheHubAsksFor(t *testing.T) {
	const cluster = "cluster1"
	minInterval := 5 * time.Second
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	n := node("n1", "16", "")
	n.Labels = map[string]string{"gpu": "a100", "rack": "r1", "nvidia.com/gpu.product": "A100"}
	spoke := k8sfake.NewClientset(n)
	hub := fleetfitfake.NewSimpleClientset()
	statusSubresource(hub)
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

	get := func() *v1alpha1.ClusterInventory {
		inv, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return nil
		}
		return inv
	}
	poll(t, "the first report", func() bool { inv := get(); return inv != nil && inv.Status.Revision == 1 })
	first := get()
	if diff := cmp.Diff(&v1alpha1.ReportedLabels{Prefixes: inventory.DefaultFeatureLabelPrefixes}, first.Status.ReportedLabels); diff != "" {
		t.Errorf("first report's reported labels (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"nvidia.com/gpu.product": "A100"}, first.Status.NodeShapes[0].Labels); diff != "" {
		t.Errorf("first report's labels (-want,+got):\n%s", diff)
	}
	poll(t, "the agent to see its inventory", func() bool { return c.hubSynced() })

	// The hub asks for gpu, as its label-key controller does.
	if _, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Patch(ctx, cluster, types.MergePatchType,
		[]byte(`{"spec":{"labelKeys":["gpu"]}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the agent to see the keys", func() bool {
		inv, err := c.hubLister.ClusterInventories(cluster).Get(cluster)
		return err == nil && len(inv.Spec.LabelKeys) == 1
	})
	clock.Step(minInterval)
	poll(t, "a report with the key", func() bool {
		inv := get()
		return inv != nil && inv.Status.ReportedLabels != nil && len(inv.Status.ReportedLabels.Keys) == 1
	})
	got := get()
	want := &v1alpha1.ReportedLabels{Prefixes: inventory.DefaultFeatureLabelPrefixes, Keys: []string{"gpu"}}
	if diff := cmp.Diff(want, got.Status.ReportedLabels); diff != "" {
		t.Errorf("reported labels (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"gpu": "a100", "nvidia.com/gpu.product": "A100"}, got.Status.NodeShapes[0].Labels); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gpu"}, got.Spec.LabelKeys); diff != "" {
		t.Errorf("the agent changed the spec (-want,+got):\n%s", diff)
	}
	if got.Status.Revision != 2 {
		t.Errorf("revision %d, want 2: new labels are new content", got.Status.Revision)
	}
}

// statusSubresource makes the fake hub write only the status on an update of the status
// subresource, as a real API server does, so that a test can tell an agent that keeps the
// hub's spec from one that sends a stale spec along with its report.
func statusSubresource(hub *fleetfitfake.Clientset) {
	hub.PrependReactor("update", "clusterinventories", func(a clienttesting.Action) (bool, runtime.Object, error) {
		u, ok := a.(clienttesting.UpdateAction)
		if !ok || a.GetSubresource() != "status" {
			return false, nil, nil
		}
		in, ok := u.GetObject().(*v1alpha1.ClusterInventory)
		if !ok {
			return false, nil, nil
		}
		obj, err := hub.Tracker().Get(a.GetResource(), in.Namespace, in.Name)
		if err != nil {
			return true, nil, err
		}
		cur := obj.(*v1alpha1.ClusterInventory).DeepCopy()
		cur.Status = in.Status
		if err := hub.Tracker().Update(a.GetResource(), cur, in.Namespace); err != nil {
			return true, nil, err
		}
		return true, cur, nil
	})
}
