package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	ut "github.com/fleetfit/fleetfit/pkg/util/testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/version"
	"github.com/fleetfit/fleetfit/test/framework"
)

const (
	gpuProduct = "nvidia.com/gpu.product"
	testNS     = "agent-test"
)

var gpu = reporter.ResourceGPU

// TestAgentReportsToHub runs cluster1's agent with its restricted
// identities and checks every object it keeps on the hub, before and after
// the spoke changes.
func TestAgentReportsToHub(t *testing.T) {
	ctx := t.Context()
	cluster := framework.SpokeName(0)
	spoke := fleet.Spokes[0].AdminClient()
	hubAdminCfg := fleet.Hub.AdminConfig()
	hubClusters := clusterclient.NewForConfigOrDie(hubAdminCfg)
	hubFleetfit := fleetfitclient.NewForConfigOrDie(hubAdminCfg)

	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range [][]byte{deployagent.HubRBAC, deployagent.HubClusterRBAC(cluster), deployagent.HubClusterRBAC(framework.SpokeName(1))} {
		if err := framework.Apply(ctx, hubAdminCfg, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := framework.Apply(ctx, fleet.Spokes[0].AdminConfig(), deployagent.SpokeRBAC); err != nil {
		t.Fatal(err)
	}

	// What OCM's registration agent wrote on the ManagedCluster: the agent
	// must leave all of it as it is.
	mc, err := hubClusters.ClusterV1().ManagedClusters().Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	registration := clusterv1.ResourceList{"cpu": resource.MustParse("999"), "pods": resource.MustParse("7"), "example.com/widgets": resource.MustParse("3")}
	mc.Status.Capacity, mc.Status.Allocatable = registration.DeepCopy(), registration.DeepCopy()
	if _, err := hubClusters.ClusterV1().ManagedClusters().UpdateStatus(ctx, mc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Five nodes: two A100 nodes, one T4 node and two without GPUs; one A100
	// node and one CPU node are partly taken.
	nodes := []*corev1.Node{
		ut.MakeNode("a100-0").Resource("cpu", "32").Resource("memory", "128Gi").Resource(gpu, "4").Label(gpuProduct, "A100").Obj(),
		ut.MakeNode("a100-1").Resource("cpu", "32").Resource("memory", "128Gi").Resource(gpu, "4").Label(gpuProduct, "A100").Obj(),
		ut.MakeNode("t4-0").Resource("cpu", "16").Resource("memory", "64Gi").Resource(gpu, "2").Label(gpuProduct, "T4").Obj(),
		ut.MakeNode("cpu-0").Resource("cpu", "8").Resource("memory", "32Gi").Obj(),
		ut.MakeNode("cpu-1").Resource("cpu", "8").Resource("memory", "32Gi").Obj(),
	}
	for _, n := range nodes {
		if err := framework.CreateNode(ctx, spoke, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := spoke.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := []*corev1.Pod{
		ut.MakePod(testNS, "train", "a100-0", corev1.ResourceList{"cpu": resource.MustParse("10"), "memory": resource.MustParse("20G"), gpu: resource.MustParse("3")}),
		ut.MakePod(testNS, "web", "cpu-0", corev1.ResourceList{"cpu": resource.MustParse("6")}),
	}
	for _, p := range pods {
		if _, err := spoke.CoreV1().Pods(testNS).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	startAgent(t, 0, framework.WithUsageScore())

	// Hand-computed: cpu 96 allocatable, 16 requested; GPUs 10 and 3.
	inv := waitForReport(t, spoke, hubFleetfit, cluster)
	for _, want := range []struct {
		name      corev1.ResourceName
		alloc     string
		requested string
		free      string
	}{
		{"cpu", "96", "16", "80"},
		// 384Gi − 20G is 365.37Gi, reported rounded down to a whole Gi.
		{"memory", "384Gi", "20G", "365Gi"},
		{gpu, "10", "3", "7"},
	} {
		got := totals(inv, want.name)
		if got.Allocatable.Cmp(resource.MustParse(want.alloc)) != 0 || got.Requested.Cmp(resource.MustParse(want.requested)) != 0 || got.Free.Cmp(resource.MustParse(want.free)) != 0 {
			t.Errorf("%s: allocatable %s, requested %s, free %s; want %s, %s, %s", want.name,
				got.Allocatable.String(), got.Requested.String(), got.Free.String(), want.alloc, want.requested, want.free)
		}
	}
	if inv.Status.NodeCount != 5 || inv.Status.Revision < 1 || inv.Status.AgentVersion != version.Get().String() || inv.Status.ObservedAt.IsZero() {
		t.Errorf("nodeCount %d, revision %d, agentVersion %q, observedAt %v; want 5, ≥1, %q, set",
			inv.Status.NodeCount, inv.Status.Revision, inv.Status.AgentVersion, inv.Status.ObservedAt, version.Get().String())
	}

	quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

	t.Run("placement score", func(t *testing.T) {
		// cpuFree = −100 + 200×80/96 = 66.7; memoryFree = −100 + 200×365/384
		// = 90.1; gpuFree = −100 + 200×7/10; the best nodes are untouched.
		want := []clusterv1alpha1.AddOnPlacementScoreItem{
			{Name: "cpuFree", Value: 67}, {Name: "cpuFreeBestNode", Value: 100},
			{Name: "memoryFree", Value: 90}, {Name: "memoryFreeBestNode", Value: 100},
			{Name: "gpuFree", Value: 40}, {Name: "gpuFreeBestNode", Value: 100},
		}
		if diff := cmp.Diff(want, reporter.Scores(&inv.Status, reporter.ScoreReference{})); diff != "" {
			t.Fatalf("Scores of the hub's report (-want,+got):\n%s", diff)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			s, err := hubClusters.ClusterV1alpha1().AddOnPlacementScores(cluster).Get(ctx, reporter.ScoreName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Status.ValidUntil == nil || !s.Status.ValidUntil.After(s.CreationTimestamp.Time) {
				return fmt.Errorf("validUntil %v is not in the future", s.Status.ValidUntil)
			}
			if diff := cmp.Diff(want, s.Status.Scores); diff != "" {
				return fmt.Errorf("scores (-want,+got):\n%s", diff)
			}
			return nil
		})
	})

	t.Run("printer columns", func(t *testing.T) {
		// What kubectl get clusterinventories shows: free memory in binary units.
		raw, err := hubFleetfit.FleetfitV1alpha1().RESTClient().Get().Namespace(cluster).Resource("clusterinventories").Name(cluster).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var table metav1.Table
		if err := json.Unmarshal(raw, &table); err != nil {
			t.Fatal(err)
		}
		if len(table.Rows) != 1 {
			t.Fatalf("%d rows, want 1", len(table.Rows))
		}
		got := map[string]any{}
		for i, c := range table.ColumnDefinitions {
			got[c.Name] = table.Rows[0].Cells[i]
		}
		for col, want := range map[string]any{"Free CPU": "80", "Free Memory": "365Gi", "GPUs": "7"} {
			if got[col] != want {
				t.Errorf("column %q: %v, want %v (all: %v)", col, got[col], want, got)
			}
		}
	})

	t.Run("resource usage score", func(t *testing.T) {
		// As OCM's resource-usage-collect-addon scores it: the best node
		// a100-1 has 32 cpu free (−100 + 200×32/100 = −36) and 4 GPUs (of
		// 20: −60); the cluster 80 cpu (60) and 7 GPUs (−30); memory of
		// more than 1Mi scores 100; there are no TPUs.
		want := []clusterv1alpha1.AddOnPlacementScoreItem{
			{Name: "cpuNodeAvailable", Value: -36}, {Name: "cpuClusterAvailable", Value: 60},
			{Name: "memNodeAvailable", Value: 100}, {Name: "memClusterAvailable", Value: 100},
			{Name: "gpuNodeAvailable", Value: -60}, {Name: "gpuClusterAvailable", Value: -30},
			{Name: "tpuNodeAvailable", Value: -100}, {Name: "tpuClusterAvailable", Value: -100},
		}
		if diff := cmp.Diff(want, reporter.UsageScores(&inv.Status)); diff != "" {
			t.Fatalf("UsageScores of the hub's report (-want,+got):\n%s", diff)
		}
		framework.Eventually(t, func(ctx context.Context) error {
			s, err := hubClusters.ClusterV1alpha1().AddOnPlacementScores(cluster).Get(ctx, reporter.UsageScoreName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if s.Status.ValidUntil == nil || !s.Status.ValidUntil.After(s.CreationTimestamp.Time) {
				return fmt.Errorf("validUntil %v is not in the future", s.Status.ValidUntil)
			}
			if diff := cmp.Diff(want, s.Status.Scores); diff != "" {
				return fmt.Errorf("scores (-want,+got):\n%s", diff)
			}
			return nil
		})
	})

	t.Run("managed cluster left to OCM", func(t *testing.T) {
		// The reports above have been written; the ManagedCluster is as OCM's
		// registration agent left it, and the agent may not even read it.
		mc, err := hubClusters.ClusterV1().ManagedClusters().Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(registration, mc.Status.Allocatable, quantities); diff != "" {
			t.Errorf("allocatable (-want,+got):\n%s", diff)
		}
		if diff := cmp.Diff(registration, mc.Status.Capacity, quantities); diff != "" {
			t.Errorf("capacity (-want,+got):\n%s", diff)
		}
		cfg, err := fleet.Hub.UserConfig(deployagent.AgentUser(cluster))
		if err != nil {
			t.Fatal(err)
		}
		asAgent := clusterclient.NewForConfigOrDie(cfg).ClusterV1().ManagedClusters()
		if _, err := asAgent.Get(ctx, cluster, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("reading its own ManagedCluster as the agent: got %v, want Forbidden", err)
		}
		patch := []byte(`{"status":{"allocatable":{"nvidia.com/gpu":"10"}}}`)
		if _, err := asAgent.Patch(ctx, cluster, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
			t.Errorf("patching its own ManagedCluster's status as the agent: got %v, want Forbidden", err)
		}
	})

	t.Run("pod deleted", func(t *testing.T) {
		if err := spoke.CoreV1().Pods(testNS).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		before := inv.Status.Revision
		inv := waitForReport(t, spoke, hubFleetfit, cluster)
		if free := totals(inv, "cpu").Free; free.Cmp(resource.MustParse("86")) != 0 {
			t.Errorf("free cpu after deleting the pod: %s, want 86", free.String())
		}
		if inv.Status.Revision <= before {
			t.Errorf("revision %d after a change, want more than %d", inv.Status.Revision, before)
		}
	})

	t.Run("node relabelled", func(t *testing.T) {
		n, err := spoke.CoreV1().Nodes().Get(ctx, "t4-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels[gpuProduct] = "L4"
		if _, err := spoke.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		inv := waitForReport(t, spoke, hubFleetfit, cluster)
		var products []string
		for _, s := range inv.Status.NodeShapes {
			if p, ok := s.Labels[gpuProduct]; ok {
				products = append(products, p)
			}
		}
		if diff := cmp.Diff([]string{"A100", "L4"}, products, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("GPU products of the shapes (-want,+got):\n%s", diff)
		}
	})

	t.Run("GPU nodes removed", func(t *testing.T) {
		// The pod goes first: pods bound to a missing node still count.
		if err := spoke.CoreV1().Pods(testNS).Delete(ctx, "train", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"a100-0", "a100-1", "t4-0"} {
			if err := spoke.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		inv := waitForReport(t, spoke, hubFleetfit, cluster)
		if inv.Status.NodeCount != 2 {
			t.Errorf("nodeCount %d, want 2", inv.Status.NodeCount)
		}
	})

	t.Run("other cluster's agent is forbidden", func(t *testing.T) {
		cfg, err := fleet.Hub.UserConfig(deployagent.AgentUser(framework.SpokeName(1)))
		if err != nil {
			t.Fatal(err)
		}
		intruder := fleetfitclient.NewForConfigOrDie(cfg).FleetfitV1alpha1().ClusterInventories(cluster)
		inv, err := hubFleetfit.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		inv.Status.NodeCount = 1000
		if _, err := intruder.UpdateStatus(ctx, inv, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("updating cluster1's inventory as cluster2's agent: got %v, want Forbidden", err)
		}
		if _, err := intruder.Create(ctx, &v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: "fake", Namespace: cluster}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("creating an inventory in cluster1's namespace as cluster2's agent: got %v, want Forbidden", err)
		}
		patch := []byte(`{"status":{"allocatable":{"nvidia.com/gpu":"1000"}}}`)
		if _, err := clusterclient.NewForConfigOrDie(cfg).ClusterV1().ManagedClusters().Patch(ctx, cluster, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); !apierrors.IsForbidden(err) {
			t.Errorf("patching cluster1's ManagedCluster as cluster2's agent: got %v, want Forbidden", err)
		}
	})
}

// startAgent runs the reporter of the i-th spoke in-process with the
// identities deploy/agent grants — the spoke's ServiceAccount and the hub
// user system:fleetfit:agent:<cluster> — until the test ends.
func startAgent(t *testing.T, i int, opts ...framework.AgentOption) {
	t.Helper()
	startAgentAs(t, fleet.Spokes[i], framework.SpokeName(i), opts...)
}

// startAgentAs runs, until the test ends, the reporter of spoke under the
// managed-cluster name cluster, and returns its log.
func startAgentAs(t *testing.T, spoke *framework.ControlPlane, cluster string, opts ...framework.AgentOption) ktesting.Buffer {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
	done, err := framework.StartAgent(ctx, fleet.Hub, spoke, cluster, minInterval, opts...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	return logger.GetSink().(ktesting.Underlier).GetBuffer()
}

// waitForReport waits until the hub's ClusterInventory equals what
// pkg/inventory computes from the spoke's current nodes and pods, and
// returns it.
func waitForReport(t *testing.T, spoke kubernetes.Interface, hub fleetfitclient.Interface, cluster string) *v1alpha1.ClusterInventory {
	t.Helper()
	opts := cmp.Options{
		cmpopts.IgnoreFields(v1alpha1.ClusterInventoryStatus{}, "Revision", "ObservedAt", "AgentVersion"),
		cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
		cmpopts.EquateEmpty(),
	}
	var inv *v1alpha1.ClusterInventory
	framework.Eventually(t, func(ctx context.Context) error {
		want, err := expectedReport(ctx, spoke)
		if err != nil {
			return err
		}
		inv, err = hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if diff := cmp.Diff(want, inv.Status, opts); diff != "" {
			return fmt.Errorf("hub's report differs from pkg/inventory's (-want,+got):\n%s", diff)
		}
		return nil
	})
	return inv
}

// expectedReport is pkg/inventory's report of the spoke's current objects, the
// unschedulable pods of HPAIntents and the DRA devices included.
func expectedReport(ctx context.Context, spoke kubernetes.Interface) (v1alpha1.ClusterInventoryStatus, error) {
	c, err := inventory.NewCluster(inventory.DefaultConfig())
	if err != nil {
		return v1alpha1.ClusterInventoryStatus{}, err
	}
	nodes, err := spoke.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return v1alpha1.ClusterInventoryStatus{}, err
	}
	for i := range nodes.Items {
		c.UpsertNode(&nodes.Items[i])
	}
	pods, err := spoke.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return v1alpha1.ClusterInventoryStatus{}, err
	}
	all := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		c.UpsertPod(&pods.Items[i])
		all[i] = &pods.Items[i]
	}
	if err := setExpectedDevices(ctx, spoke, c); err != nil {
		return v1alpha1.ClusterInventoryStatus{}, err
	}
	st := c.Summarize()
	st.Unschedulable, st.OmittedUnschedulable = inventory.SummarizeUnschedulable(all, v1alpha1.MaxReportedUnschedulable)
	return st, nil
}

func totals(inv *v1alpha1.ClusterInventory, name corev1.ResourceName) v1alpha1.ResourceTotals {
	for _, r := range inv.Status.Resources {
		if r.Name == name {
			return r
		}
	}
	return v1alpha1.ResourceTotals{Name: name}
}
