package reporter

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
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

const agentNS = "fleetfit-agent"

// kwokInstanceTypes is a catalogue as Karpenter's kwok provider writes its
// instance types: names, resources, and fields the agent ignores.
const kwokInstanceTypes = `[
  {"name": "cpu-8x", "architecture": "amd64", "operatingSystems": ["linux"],
   "offerings": [{"Price": 0.4, "Available": true, "Requirements": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["test-zone-a"]}]}],
   "resources": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
  {"name": "gpu-4x", "resources": {"cpu": "32", "memory": "256Gi", "pods": "110", "nvidia.com/gpu": "4"}},
  {"name": "gpu-8x", "resources": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}}
]`

func instanceTypesConfigMap(data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultInstanceTypesConfigMap, Namespace: agentNS},
		Data:       map[string]string{InstanceTypesKey: data},
	}
}

// karpenterPool is a NodePool of the GPU instance types, on demand, with a
// label the agent reports (fleetfit.io/pool) and one it does not (team),
// tainted, limited to gpuLimit GPUs of which usedGPUs are used, Ready.
func karpenterPool(name, gpuLimit, usedGPUs string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1",
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"fleetfit.io/pool": name, "team": "ml"}},
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "default"},
					"requirements": []any{
						map[string]any{"key": corev1.LabelInstanceTypeStable, "operator": "In", "values": []any{"gpu-4x", "gpu-8x"}},
						map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}, "minValues": int64(1)},
					},
					"taints":        []any{map[string]any{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}},
					"startupTaints": []any{map[string]any{"key": "example.com/agent-not-ready", "effect": "NoSchedule"}},
				},
			},
			// An integer, as a YAML manifest gives it.
			"limits": map[string]any{"nvidia.com/gpu": int64(mustInt(gpuLimit))},
		},
		"status": map[string]any{
			"resources": map[string]any{"nvidia.com/gpu": usedGPUs, "cpu": "0", "nodes": "0"},
			"conditions": []any{
				map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
			},
		},
	}}
}

func mustInt(s string) int64 {
	q := resource.MustParse(s)
	return q.Value()
}

func serveNodePools(spoke *k8sfake.Clientset) {
	spoke.Resources = append(spoke.Resources, &metav1.APIResourceList{
		GroupVersion: NodePoolResource.GroupVersion().String(),
		APIResources: []metav1.APIResource{{Name: "nodepools"}, {Name: "nodepools/status"}},
	})
}

// poolReporter is a running reporter over fake spoke clients.
type poolReporter struct {
	c                  *Controller
	hub                *fleetfitfake.Clientset
	dyn                *dynamicfake.FakeDynamicClient
	writes, reports    *atomic.Int32
	watches, dynWatchs *atomic.Int32
}

func runPoolReporter(t *testing.T, clock *testingclock.FakeClock, minInterval time.Duration, spoke *k8sfake.Clientset, pools ...runtime.Object) poolReporter {
	t.Helper()
	r := poolReporter{
		hub:     fleetfitfake.NewSimpleClientset(),
		dyn:     dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{NodePoolResource: "NodePoolList"}, pools...),
		writes:  new(atomic.Int32),
		reports: new(atomic.Int32), watches: new(atomic.Int32), dynWatchs: new(atomic.Int32),
	}
	// The fake API servers drop events between an informer's list and its
	// watch; count the watches so that objects change only after them.
	spoke.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := spoke.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		r.watches.Add(1)
		return true, w, nil
	})
	r.dyn.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
		r.dynWatchs.Add(1)
		return false, nil, nil
	})
	r.hub.PrependReactor("update", "clusterinventories", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			r.writes.Add(1)
		}
		return false, nil, nil
	})
	var err error
	r.c, err = New(Clients{Spoke: spoke, Hub: r.hub, HubCluster: clusterfake.NewSimpleClientset(), SpokeDynamic: r.dyn}, Options{
		ClusterName: "cluster1", Inventory: inventory.DefaultConfig(), MinInterval: minInterval, Clock: clock,
		InstanceTypesConfigMap: types.NamespacedName{Namespace: agentNS, Name: DefaultInstanceTypesConfigMap},
		OnReport:               func(*v1alpha1.ClusterInventoryStatus) { r.reports.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	done := make(chan error, 1)
	go func() { done <- r.c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

func (r poolReporter) status(t *testing.T) v1alpha1.ClusterInventoryStatus {
	t.Helper()
	inv, err := r.hub.FleetfitV1alpha1().ClusterInventories("cluster1").Get(t.Context(), "cluster1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return inv.Status
}

// delivered waits until the informers hold a change (in) and the pools are marked dirty. An
// event of before (an informer may hand its handlers the objects of its first list after
// it reports synced) may have marked them; but the sync that step asks for then still
// reads the change, since the listers hold it already.
func (r poolReporter) delivered(t *testing.T, what string, in func() bool) {
	t.Helper()
	poll(t, "the informers to deliver "+what, func() bool { return in() && r.c.pools.dirty.Load() })
}

// step asks for a sync, moves the clock on by the interval and waits for the write the
// change makes. The handlers ask for a sync too, but one may compute its delay before the
// clock moves and give it to the queue after: this one is queued before.
func (r poolReporter) step(t *testing.T, clock *testingclock.FakeClock, d time.Duration, what string, writes int32) {
	t.Helper()
	r.c.enqueue()
	clock.Step(d)
	poll(t, what, func() bool { return r.writes.Load() == writes })
}

var quantities = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// maxNodes returns the maxNodes of each shape of the only pool of st.
func maxNodes(t *testing.T, st *v1alpha1.ClusterInventoryStatus) map[string]int32 {
	t.Helper()
	if len(st.NodePools) != 1 {
		t.Fatalf("%d node pools, want 1: %+v", len(st.NodePools), st.NodePools)
	}
	out := map[string]int32{}
	for _, s := range st.NodePools[0].Shapes {
		out[s.Name] = s.MaxNodes
	}
	return out
}

// TestReportsNodePools checks, with a fake clock, that a cluster serving
// Karpenter's NodePools reports its pool with the shapes of the agent's
// ConfigMap that the pool's requirements admit, as the hub reads them; that
// the pool's usage reaching its limit is reported at the next interval;
// that a status change the report does not read writes nothing; that
// without the ConfigMap the shapes come from the nodes the pool launched,
// and that a ConfigMap the agent cannot read says so.
func TestReportsNodePools(t *testing.T) {
	minInterval := 5 * time.Second
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	spoke := k8sfake.NewClientset(node("n1", "16", ""), instanceTypesConfigMap(kwokInstanceTypes))
	serveNodePools(spoke)
	r := runPoolReporter(t, clock, minInterval, spoke, karpenterPool("gpu", "4", "0"))

	poll(t, "the first write", func() bool { return r.writes.Load() == 1 })
	// Nodes, bound pods, waiting pods and the ConfigMap; the NodePools.
	poll(t, "the spoke's watches", func() bool { return r.watches.Load() == spokeWatches+1 && r.dynWatchs.Load() == 1 })
	st := r.status(t)
	gpu := corev1.ResourceName("nvidia.com/gpu")
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	want := []v1alpha1.ReportedNodePool{{
		Name: "gpu", Provider: ProviderKarpenter, Ready: true,
		// team and karpenter.sh/capacity-type are no reported labels.
		Labels:     map[string]string{"fleetfit.io/pool": "gpu"},
		Taints:     []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}},
		Limits:     rl("nvidia.com/gpu", "4"),
		Usage:      rl("nvidia.com/gpu", "0", "cpu", "0", "nodes", "0"),
		ShapesFrom: v1alpha1.ShapesFromConfigMap,
		Shapes: []v1alpha1.PoolShape{
			{Name: "gpu-4x", Allocatable: rl("cpu", "32", "memory", "256Gi", "pods", "110", "nvidia.com/gpu", "4"), Labels: map[string]string{corev1.LabelInstanceTypeStable: "gpu-4x"}, MaxNodes: 1},
			{Name: "gpu-8x", Allocatable: rl("cpu", "64", "memory", "512Gi", "pods", "110", "nvidia.com/gpu", "8"), Labels: map[string]string{corev1.LabelInstanceTypeStable: "gpu-8x"}, MaxNodes: 0},
		},
	}}
	if diff := cmp.Diff(want, st.NodePools, quantities); diff != "" {
		t.Errorf("node pools of the first report (-want +got):\n%s", diff)
	}
	rooms := slices.DeleteFunc(inventory.PoolRooms(&st), func(r inventory.PoolRoom) bool { return r.Nodes == 0 })
	if len(rooms) != 1 || rooms[0] != (inventory.PoolRoom{Pool: "gpu", Shape: "gpu-4x", Nodes: 1}) {
		t.Errorf("what the hub reads the pool can add: %+v, want 1 gpu-4x", rooms)
	}

	// Karpenter launched a node for 4 GPUs: the pool is at its limit.
	pools := r.dyn.Resource(NodePoolResource)
	full := karpenterPool("gpu", "4", "4")
	if _, err := pools.Update(t.Context(), full, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.delivered(t, "the usage", func() bool {
		o, err := r.c.pools.pools.Get("gpu")
		if err != nil {
			return false
		}
		used, _, _ := unstructured.NestedString(o.(*unstructured.Unstructured).Object, "status", "resources", "nvidia.com/gpu")
		return used == "4"
	})
	r.step(t, clock, minInterval, "the usage written", 2)
	st = r.status(t)
	if diff := cmp.Diff(map[string]int32{"gpu-4x": 0, "gpu-8x": 0}, maxNodes(t, &st)); diff != "" {
		t.Errorf("maxNodes at the limit (-want +got):\n%s", diff)
	}
	if q := st.NodePools[0].Usage[gpu]; q.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("usage %s GPUs, want 4", q.String())
	}

	// A status change the report does not read marks nothing.
	reports := r.reports.Load()
	unread := karpenterPool("gpu", "4", "4")
	unread.Object["status"].(map[string]any)["nodeClassObservedGeneration"] = int64(2)
	if _, err := pools.Update(t.Context(), unread, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.c.enqueue()
	clock.Step(minInterval)
	poll(t, "a sync", func() bool { return r.reports.Load() > reports })
	if got := r.writes.Load(); got != 2 {
		t.Errorf("writes after a status change the report does not read: %d, want 2", got)
	}

	// Without the ConfigMap: the shapes of the nodes the pool launched.
	launched := node("kwok-gpu-1", "32", "4")
	launched.Labels = map[string]string{inventory.LabelKarpenterNodePool: "gpu", corev1.LabelInstanceTypeStable: "gpu-4x", "fleetfit.io/pool": "gpu"}
	if _, err := spoke.CoreV1().Nodes().Create(t.Context(), launched, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := spoke.CoreV1().ConfigMaps(agentNS).Delete(t.Context(), DefaultInstanceTypesConfigMap, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.delivered(t, "the node and the deletion", func() bool {
		_, err := r.c.pools.configMaps.ConfigMaps(agentNS).Get(DefaultInstanceTypesConfigMap)
		_, errNode := r.c.pools.nodes.Get("kwok-gpu-1")
		return err != nil && errNode == nil
	})
	r.step(t, clock, minInterval, "the shapes from nodes written", 3)
	st = r.status(t)
	p := st.NodePools[0]
	if p.ShapesFrom != v1alpha1.ShapesFromNodes || len(p.Shapes) != 1 || p.Shapes[0].Name != "gpu-4x" || p.Message != "" {
		t.Errorf("pool without a catalogue: %+v, want the one shape of its node, from Nodes", p)
	}
	if diff := cmp.Diff(launched.Status.Allocatable, p.Shapes[0].Allocatable, quantities); diff != "" {
		t.Errorf("allocatable of the shape from the node (-want +got):\n%s", diff)
	}

	// A ConfigMap that is no list of instance types: the nodes still, and
	// the pool says why.
	if _, err := spoke.CoreV1().ConfigMaps(agentNS).Create(t.Context(), instanceTypesConfigMap(`{"name": "gpu-4x"}`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.delivered(t, "the ConfigMap", func() bool {
		_, err := r.c.pools.configMaps.ConfigMaps(agentNS).Get(DefaultInstanceTypesConfigMap)
		return err == nil
	})
	r.step(t, clock, minInterval, "the complaint written", 4)
	p = r.status(t).NodePools[0]
	if p.ShapesFrom != v1alpha1.ShapesFromNodes || !strings.Contains(p.Message, "ConfigMap fleetfit-agent/fleetfit-instance-types, key instance-types.json: not a JSON list") {
		t.Errorf("pool with a broken catalogue: shapes from %q, message %q", p.ShapesFrom, p.Message)
	}

	// The pool is deleted: no pools.
	if err := pools.Delete(t.Context(), "gpu", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.delivered(t, "the pool's deletion", func() bool {
		_, err := r.c.pools.pools.Get("gpu")
		return err != nil
	})
	r.step(t, clock, minInterval, "the deletion written", 5)
	if st := r.status(t); len(st.NodePools) != 0 {
		t.Errorf("node pools after the pool's deletion: %+v", st.NodePools)
	}
}

// TestNodePoolsNotServed checks that a cluster without Karpenter's NodePools
// reports none and opens no watch on them or on the ConfigMap.
func TestNodePoolsNotServed(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	spoke := k8sfake.NewClientset(node("n1", "16", ""), instanceTypesConfigMap(kwokInstanceTypes))
	r := runPoolReporter(t, clock, time.Second, spoke, karpenterPool("gpu", "4", "0"))

	poll(t, "the first write", func() bool { return r.writes.Load() == 1 })
	poll(t, "the spoke's watches", func() bool { return r.watches.Load() == spokeWatches })
	if st := r.status(t); st.NodePools != nil || st.OmittedNodePools != 0 {
		t.Errorf("node pools of a cluster without Karpenter: %+v (%d omitted)", st.NodePools, st.OmittedNodePools)
	}
	clock.Step(time.Second)
	r.c.enqueue()
	poll(t, "a second report", func() bool { return r.reports.Load() >= 2 })
	if got := r.dynWatchs.Load(); got != 0 {
		t.Errorf("%d watches of NodePools on a cluster without them", got)
	}
	if got := r.watches.Load(); got != spokeWatches {
		t.Errorf("%d watches on the spoke, want %d", got, spokeWatches)
	}
}

func TestParseInstanceTypes(t *testing.T) {
	types, err := ParseInstanceTypes([]byte(kwokInstanceTypes))
	if err != nil {
		t.Fatal(err)
	}
	if len(types) != 3 || types[1].Name != "gpu-4x" || types[1].Resources.Name("nvidia.com/gpu", resource.DecimalSI).Value() != 4 {
		t.Errorf("kwok's catalogue read as %+v", types)
	}
	types, err = ParseInstanceTypes([]byte(`[{"name": "g6.12xlarge", "allocatable": {"cpu": "47", "nvidia.com/gpu": 4}, "labels": {"karpenter.k8s.aws/instance-gpu-name": "l4"}}]`))
	if err != nil || len(types) != 1 || types[0].Labels["karpenter.k8s.aws/instance-gpu-name"] != "l4" {
		t.Errorf("a catalogue of allocatables read as %+v, %v", types, err)
	}
	for name, raw := range map[string]string{
		"not a list":    `{"name": "a"}`,
		"no name":       `[{"resources": {"cpu": "1"}}]`,
		"twice":         `[{"name": "a", "resources": {"cpu": "1"}}, {"name": "a", "resources": {"cpu": "2"}}]`,
		"no resources":  `[{"name": "a"}]`,
		"bad quantity":  `[{"name": "a", "resources": {"cpu": "lots"}}]`,
		"not even JSON": `[`,
	} {
		if _, err := ParseInstanceTypes([]byte(raw)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
