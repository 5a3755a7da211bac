package placement

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	testingclock "k8s.io/utils/clock/testing"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// BenchmarkWaitingCycle runs one cycle of a placement that waits for room no cluster has (one
// replica of 4 GPUs on one node; no node has more than 2 free) over 10,000 clusters of 4 to 8
// nodes, which 5,000 other placements decide 3 each: the cycle a waiting placement runs when a
// report frees room somewhere.
func BenchmarkWaitingCycle(b *testing.B) {
	const numClusters, numPlacements, perPlacement = 10000, 5000, 3
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := cachetest.Fleet{
		Sets:     []*clusterv1beta2.ManagedClusterSet{st.MakeExclusiveClusterSet("default")},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.MakeClusterSetBinding("ns", "default")},
		Decided:  map[string][]string{},
	}
	names := make([]string, numClusters)
	for i := range numClusters {
		names[i] = fmt.Sprintf("cluster-%05d", i)
		f.Clusters = append(f.Clusters, st.MakeCluster(names[i]).ClusterSet("default").Obj())
		var nodes []*corev1.Node
		var pods []*corev1.Pod
		for j := range 4 + i%5 {
			name := fmt.Sprintf("%s-node-%d", names[i], j)
			w := st.MakeNode(name).Resource(corev1.ResourceCPU, "32").Resource(corev1.ResourceMemory, "128Gi")
			if j == 0 && i%3 != 2 {
				w = st.MakeNode(name).Resource(corev1.ResourceCPU, "48").Resource(corev1.ResourceMemory, "192Gi").
					Resource("nvidia.com/gpu", "4").Label("nvidia.com/gpu.product", "A100").
					Taint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule)
				pods = append(pods, st.MakePod("default", name+"-work", name, corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("8"), "nvidia.com/gpu": resource.MustParse("2")}))
			} else if k := (i + j) % 8; k > 0 {
				pods = append(pods, st.MakePod("default", name+"-work", name, corev1.ResourceList{
					corev1.ResourceCPU: *resource.NewQuantity(int64(2*k), resource.DecimalSI)}))
			}
			nodes = append(nodes, w.Obj())
		}
		f.Inventories = append(f.Inventories, st.MakeInventory(names[i], now, nodes, pods...))
	}
	for p := range numPlacements {
		decided := make([]string, perPlacement)
		for k := range decided {
			decided[k] = names[(p*7919+k*104729)%numClusters]
		}
		f.Decided[fmt.Sprintf("ns/p%04d", p)] = decided
	}
	snap := f.Snapshot()
	s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), f.ScoreLister()),
		plugins.NewRegistry(), plugins.DefaultProfile())
	if err != nil {
		b.Fatal(err)
	}
	p := st.MakePlacement("waiting", "ns").ClusterSets("default").NumberOfClusters(3).Obj()
	intent := st.MakeHPAIntent("waiting", "ns").Placement("waiting").Consumer(
		st.MakeConsumer("app").Target("Deployment", "waiting", "app").Requirement(
			st.MakeResource("cpu", "cpu").Requests("2").Obj(),
			st.MakeResource("gpu", "nvidia.com/gpu").Limits("4").Obj()).Obj()).Obj()
	in := PlanInput{Scheduler: s, Snapshot: snap, Placement: p, Intents: []*fleetfitv1alpha1.HPAIntent{intent}, Now: now}
	if plan := PlanCycle(b.Context(), in); plan.Kept || len(plan.Result.Decisions()) != 0 {
		b.Fatalf("the waiting placement was decided: kept %v, %d decisions", plan.Kept, len(plan.Result.Decisions()))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		PlanCycle(b.Context(), in)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
}
