package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/simulate"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// syntheticFleet is n clusters, each with its agent's report of a handful of nodes: A100 or
// T4 GPU nodes, some of their GPUs taken, and CPU nodes. Reports are summarised once per
// layout by the agent's code and copied for each cluster.
func syntheticFleet(n int) *simulate.Fleet {
	gpuNode := func(name, product, gpus string) *corev1.Node {
		return ut.MakeNode(name).Resource("cpu", "64").Resource("memory", "512Gi").Resource("nvidia.com/gpu", gpus).
			Label("nvidia.com/gpu.product", product).Taint("nvidia.com/gpu", "present", corev1.TaintEffectNoSchedule).Obj()
	}
	cpuNode := func(name string) *corev1.Node {
		return ut.MakeNode(name).Resource("cpu", "32").Resource("memory", "128Gi").Obj()
	}
	busy := func(name, node, cpu, gpus string) *corev1.Pod {
		requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		if gpus != "0" {
			requests["nvidia.com/gpu"] = resource.MustParse(gpus)
		}
		return ut.MakePod("batch", name, node, requests)
	}
	layouts := []fleetfitv1alpha1.ClusterInventoryStatus{
		ut.InventoryStatus([]*corev1.Node{gpuNode("a100-0", "A100", "8"), gpuNode("a100-1", "A100", "8"), cpuNode("cpu-0"), cpuNode("cpu-1")},
			busy("p0", "a100-0", "40", "6"), busy("p1", "a100-1", "10", "2"), busy("p2", "cpu-0", "30", "0")),
		ut.InventoryStatus([]*corev1.Node{gpuNode("t4-0", "Tesla-T4", "4"), gpuNode("t4-1", "Tesla-T4", "4"), gpuNode("t4-2", "Tesla-T4", "4"), cpuNode("cpu-0")},
			busy("p0", "t4-0", "4", "3"), busy("p1", "t4-1", "4", "3")),
		ut.InventoryStatus([]*corev1.Node{cpuNode("cpu-0"), cpuNode("cpu-1"), cpuNode("cpu-2")}, busy("p0", "cpu-1", "31", "0")),
	}
	f := &simulate.Fleet{}
	for i := range n {
		name := fmt.Sprintf("cluster-%05d", i)
		f.Clusters = append(f.Clusters, ut.MakeCluster(name).Available().Obj())
		inv := &fleetfitv1alpha1.ClusterInventory{}
		inv.Name, inv.Namespace = name, name
		inv.Status = *layouts[i%len(layouts)].DeepCopy()
		inv.Status.ObservedAt.Time = readAt.Add(-time.Duration(i%60) * time.Second)
		f.Inventories = append(f.Inventories, inv)
	}
	return f
}

// BenchmarkFleetEndpoint serves GET /api/fleet over 10,000 clusters: "cold" reads a new
// snapshot for every request (its per-cluster summaries computed once, then one page
// encoded), which is the most a page costs once per max-age; "cached" serves one page from the
// last snapshot, what every other request costs; "fit" also answers "where do 4× A100 + 64Gi
// fit on one node" for every cluster. The hub's own cost of listing is not part of it.
func BenchmarkFleetEndpoint(b *testing.B) {
	const clusters = 10000
	fleet := syntheticFleet(clusters)
	load := func(context.Context, ...string) (*simulate.Fleet, error) { return fleet, nil }
	for _, bc := range []struct {
		name  string
		query string
		cold  bool
	}{
		{name: "cold", query: "/api/fleet", cold: true},
		{name: "cached", query: "/api/fleet"},
		{name: "fit", query: "/api/fleet?gpus=4&model=A100&memory=64Gi"},
		{name: "fit-only-last-page", query: "/api/fleet?gpus=4&model=A100&memory=64Gi&only=fits&offset=3300"},
	} {
		b.Run(fmt.Sprintf("clusters=%d/%s", clusters, bc.name), func(b *testing.B) {
			now := readAt
			s := New(Options{Load: load, Now: func() time.Time { return now }})
			h := s.Handler()
			if !bc.cold {
				serveOnce(b, h, bc.query) // the snapshot and its summaries
			}
			var size int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if bc.cold {
					now = now.Add(DefaultMaxAge)
				}
				size = serveOnce(b, h, bc.query)
			}
			b.ReportMetric(float64(size), "bytes/response")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/clusters, "ns/cluster")
		})
	}
}

func serveOnce(b *testing.B, h http.Handler, path string) int {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Host = "127.0.0.1:8001"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		b.Fatalf("%s: %d %s", path, w.Code, w.Body.String())
	}
	return w.Body.Len()
}
