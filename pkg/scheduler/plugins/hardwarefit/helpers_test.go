package hardwarefit

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const (
	gpu        = "nvidia.com/gpu"
	gpuProduct = "nvidia.com/gpu.product"
	avx512     = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
	// placementKey is the placement every test request schedules.
	placementKey = "ns/p"
)

// cpuNode starts a node with cpu cores and 32Gi of memory.
func cpuNode(cpu string) *st.NodeWrapper {
	return st.MakeNode("").Resource(corev1.ResourceCPU, cpu).Resource(corev1.ResourceMemory, "32Gi")
}

// gpuNode starts a node with 32 cores, 128Gi and 4 GPUs of the given product.
func gpuNode(product string) *st.NodeWrapper {
	return cpuNode("32").Resource(corev1.ResourceMemory, "128Gi").Resource(gpu, "4").Label(gpuProduct, product)
}

// nodes returns n copies of w named prefix-0, prefix-1, ...
func nodes(prefix string, n int, w *st.NodeWrapper) []*corev1.Node {
	out := make([]*corev1.Node, n)
	for i := range out {
		out[i] = w.Obj()
		out[i].Name = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// pod returns a pod on node requesting cpu cores.
func pod(name, node, cpu string) *corev1.Pod {
	return st.MakePod("default", name, node, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)})
}

// cluster is a managed cluster of a test fleet.
type cluster struct {
	name string
	// inv is the agent's report; nil when the cluster runs no agent.
	inv          *fleetfitv1alpha1.ClusterInventory
	reservations []framework.Reservation
}

// reporting returns a cluster whose agent reported nodes and pods a minute ago.
func reporting(name string, nodes []*corev1.Node, pods ...*corev1.Pod) cluster {
	return reportingAt(name, now.Add(-time.Minute), nodes, pods...)
}

func reportingAt(name string, observedAt time.Time, nodes []*corev1.Node, pods ...*corev1.Pod) cluster {
	return cluster{name: name, inv: st.MakeInventory(name, observedAt, nodes, pods...)}
}

func (c cluster) reserving(r ...framework.Reservation) cluster {
	c.reservations = append(c.reservations, r...)
	return c
}

// snapshot indexes the clusters as the hub's cache does, with their reservations.
func snapshot(clusters []cluster) *framework.Snapshot {
	in := framework.SnapshotInput{}
	for _, c := range clusters {
		info := framework.NewClusterInfo(st.MakeCluster(c.name).Obj(), nil, c.inv)
		info.Reservations = c.reservations
		in.Clusters = append(in.Clusters, info)
	}
	return framework.NewSnapshot(in)
}

// request schedules placementKey with intents; decided names clusters of its decisions.
func request(snap *framework.Snapshot, intents []*fleetfitv1alpha1.HPAIntent, decided ...string) *framework.Request {
	return &framework.Request{
		Placement: st.MakePlacement("p", "ns").Obj(),
		Intents:   intents,
		Decided:   snap.BitsetOf(decided),
		Now:       now,
	}
}

// intent returns the HPAIntent "app" of the placement under test.
func intent(consumers ...*st.ConsumerWrapper) *fleetfitv1alpha1.HPAIntent {
	w := st.MakeHPAIntent("app", "ns").Placement("p")
	for _, c := range consumers {
		w.Consumer(c.Obj())
	}
	in := w.Obj()
	// It has shaped the placement's decisions before, as an intent of a running workload has.
	in.Status.ScheduledPlacement = "p"
	return in
}

// newIntent is an intent that has never shaped the placement's decisions.
func newIntent(consumers ...*st.ConsumerWrapper) *fleetfitv1alpha1.HPAIntent {
	in := intent(consumers...)
	in.Status.ScheduledPlacement = ""
	return in
}

// consumer starts a consumer of replicas pods that each request cpu cores.
func consumer(name string, replicas int32, cpu string) *st.ConsumerWrapper {
	return st.MakeConsumer(name).Target("Deployment", name, "main").Replicas(replicas).
		Requirement(st.MakeResource("cpu", "cpu").Requests(cpu).Obj())
}

// gpuConsumer starts a consumer of replicas pods that each request 4 cores and one GPU.
func gpuConsumer(name string, replicas int32) *st.ConsumerWrapper {
	return consumer(name, replicas, "4").Requirement(st.MakeResource("gpu", gpu).Limits("1").Obj())
}

func feature(key string, op corev1.NodeSelectorOperator, values ...string) fleetfitv1alpha1.ResourceRequirement {
	return st.MakeFeature("feature", key).Operator(op).Values(values...).Obj()
}

// recorder records rejections by cluster name.
type recorder struct {
	snap    *framework.Snapshot
	reasons map[string]string
}

func (r *recorder) Reject(i int, reason string) { r.reasons[r.snap.Cluster(i).Name()] = reason }

func names(snap *framework.Snapshot, b *framework.Bitset) []string {
	var out []string
	b.ForEach(func(i int) { out = append(out, snap.Cluster(i).Name()) })
	return out
}

func newPlugin(t testing.TB) *HardwareFit {
	t.Helper()
	p, err := New(nil, framework.Args{})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*HardwareFit)
}

// reservation is one 4-core pod reserved by a placement until the given time.
func reservation(t testing.TB, placement string, until time.Time) framework.Reservation {
	t.Helper()
	r, err := inventory.NewRequest(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return framework.Reservation{Placement: placement, Request: r, Replicas: 1, Until: until}
}
