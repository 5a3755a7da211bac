package allocationcandidates

import (
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const (
	benchClusters  = 10000
	benchShapes    = 20
	benchTemplates = 16
)

// benchInventories returns inventories of twenty shapes of three nodes each, busy in
// different ways: CPU pools of several sizes, some on spot, some with NVMe, and A100 and T4
// GPU pools behind the usual nvidia.com/gpu taint. Clusters share a few of them, as a real
// fleet's clusters share node pool templates.
func benchInventories() []*fleetfitv1alpha1.ClusterInventory {
	var out []*fleetfitv1alpha1.ClusterInventory
	for t := range benchTemplates {
		var nodes []*corev1.Node
		var pods []*corev1.Pod
		for s := range benchShapes {
			for n := range 3 {
				name := fmt.Sprintf("s%d-n%d", s, n)
				w := ut.MakeNode(name).Label("fleetfit.io/pool", fmt.Sprint(s)).
					Resource(corev1.ResourceCPU, fmt.Sprint(8*(1+s%4))).Resource(corev1.ResourceMemory, fmt.Sprintf("%dGi", 32*(1+s%4)))
				switch {
				case s%10 == 0:
					w.Resource("nvidia.com/gpu", "8").Label("nvidia.com/gpu.product", "A100").Taint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule)
				case s%10 == 5:
					w.Resource("nvidia.com/gpu", "4").Label("nvidia.com/gpu.product", "T4").Taint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule)
				case s%3 == 0:
					w.Label("fleetfit.io/disk", "nvme")
				case s%3 == 1:
					w.Label("fleetfit.io/spot", "true")
				}
				nodes = append(nodes, w.Obj())
				if busy := (t + s + n) % 4; busy > 0 {
					pods = append(pods, ut.MakePod("ns", name, name, corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse(fmt.Sprint(2 * busy * (1 + s%4))),
						corev1.ResourceMemory: resource.MustParse(fmt.Sprintf("%dGi", 8*busy*(1+s%4))),
					}))
				}
			}
		}
		out = append(out, ut.MakeInventory("template", now, nodes, pods...))
	}
	return out
}

// twoGroups is a GPU worker next to an isolated CPU worker on NVMe, not on spot nodes.
const twoGroups = "resources1=cpu:4,memory:16Gi,nvidia.com/gpu:1&required1=nvidia.com/gpu.product=A100" +
	"&resources2=cpu:8,memory:32Gi&required2=fleetfit.io/disk=nvme,!fleetfit.io/spot&group_policy=isolate"

func benchSnapshot(b *testing.B) *framework.Snapshot {
	templates := benchInventories()
	infos := make([]*framework.ClusterInfo, 0, benchClusters)
	for i := range benchClusters {
		name := fmt.Sprintf("cluster-%05d", i)
		inv := templates[i%len(templates)].DeepCopy()
		inv.Name, inv.Namespace = name, name
		infos = append(infos, framework.NewClusterInfo(ut.MakeCluster(name).Available().Obj(), nil, inv))
	}
	return framework.NewSnapshot(framework.SnapshotInput{Clusters: infos})
}

// BenchmarkEvaluateTwoNumberedGroups answers one query with two numbered groups — a GPU
// worker next to an isolated NVMe CPU worker — over 10,000 clusters of 20 shapes.
func BenchmarkEvaluateTwoNumberedGroups(b *testing.B) {
	snap := benchSnapshot(b)
	// "all" answers every combination (55 per cluster), "limit=1000" stops after a thousand,
	// as a scheduler asking for candidates would, and "whole-nodes" asks for nodes with
	// nothing on them, which every cluster has to be searched for and few have; "no-room" asks
	// for more GPUs than any node has, so every cluster is searched and none answers.
	for _, bc := range []struct{ name, query string }{
		{"whole-nodes", "resources1=cpu:8,nvidia.com/gpu:8&required1=nvidia.com/gpu.product=A100" +
			"&resources2=cpu:32,memory:128Gi&required2=fleetfit.io/disk=nvme&group_policy=isolate"},
		{"no-room", "resources1=cpu:8,nvidia.com/gpu:16&required1=nvidia.com/gpu.product=A100" +
			"&resources2=cpu:32,memory:128Gi&required2=fleetfit.io/disk=nvme&group_policy=isolate"},
		{"limit=1000", twoGroups + "&limit=1000"},
		{"all", twoGroups},
	} {
		q, err := ParseQuery(bc.query)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			var n int
			b.ReportAllocs()
			for b.Loop() {
				resp, err := Evaluate(b.Context(), snap, q, now, DefaultLimits())
				if err != nil {
					b.Fatal(err)
				}
				n = len(resp.AllocationRequests)
			}
			b.ReportMetric(float64(n), "candidates")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/query")
		})
	}
}

// numberedGroups returns n numbered groups of res with policy.
func numberedGroups(n int, res, policy string) string {
	q := "group_policy=" + policy
	for i := 1; i <= n; i++ {
		q += fmt.Sprintf("&resources%d=%s", i, res)
	}
	return q
}

// BenchmarkEvaluateWorstQueries answers, over 10,000 clusters of 20 shapes, the queries
// that enumerate the most: seven one-core groups with no limit (every combination of the
// nodes, cut at DefaultMaxCandidates), sixteen isolated GPU groups where a cluster has twelve
// GPU nodes (no candidate, refused once the work budget is spent), and one group no node
// has room for (every cluster searched, none answers). steps/query is the work the budget
// counts; B/op what the query allocates.
func BenchmarkEvaluateWorstQueries(b *testing.B) {
	snap := benchSnapshot(b)
	for _, bc := range []struct{ name, query string }{
		{"seven-groups", numberedGroups(7, "cpu:1", PolicyNone)},
		{"sixteen-gpu-groups", numberedGroups(MaxNumberedGroups, "nvidia.com/gpu:1", PolicyIsolate)},
		{"no-room", "resources=cpu:64"},
	} {
		q, err := ParseQuery(bc.query)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			var n int
			var steps int64
			b.ReportAllocs()
			for b.Loop() {
				resp, spent, err := evaluate(b.Context(), snap, q, now, DefaultLimits())
				var costly *BudgetError
				if err != nil && !errors.As(err, &costly) {
					b.Fatal(err)
				}
				n, steps = 0, spent
				if resp != nil {
					n = len(resp.AllocationRequests)
				}
			}
			b.ReportMetric(float64(n), "candidates")
			b.ReportMetric(float64(steps), "steps/query")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/query")
		})
	}
}
