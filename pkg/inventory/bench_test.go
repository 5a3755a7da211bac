package inventory

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// benchFleet is a large cluster: nodes from 20 templates (so 20 shapes),
// each with the handful of feature labels a GPU or CPU pool carries, and ten
// pods per node from a catalogue of common sizes.
func benchFleet(nodeCount, podsPerNode int) ([]*corev1.Node, []*corev1.Pod) {
	rng := rand.New(rand.NewPCG(1, 1))
	var templates []*nodeWrapper
	for i := range 20 {
		w := makeNode("").
			Label("kubernetes.io/hostname", "x").
			Label("node.kubernetes.io/instance-type", fmt.Sprintf("type-%d", i)).
			Label("topology.kubernetes.io/zone", fmt.Sprintf("zone-%d", i%3)).
			Label("feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true").
			Label("feature.node.kubernetes.io/cpu-model.family", "6")
		cpu, mem := 16<<(i%3), 64<<(i%3)
		if i%4 == 0 {
			w.Label("nvidia.com/gpu.product", "A100-SXM4-80GB").Label("nvidia.com/gpu.memory", "81920")
			w.Resources("cpu", fmt.Sprint(cpu), "memory", fmt.Sprintf("%dGi", mem), "pods", "110",
				"ephemeral-storage", "500Gi", "nvidia.com/gpu", "8")
		} else {
			w.Resources("cpu", fmt.Sprint(cpu), "memory", fmt.Sprintf("%dGi", mem), "pods", "110", "ephemeral-storage", "500Gi")
		}
		templates = append(templates, w)
	}
	sizes := [][]string{
		{"cpu", "100m", "memory", "128Mi"}, {"cpu", "250m", "memory", "512Mi"}, {"cpu", "500m", "memory", "1Gi"},
		{"cpu", "1", "memory", "2Gi"}, {"cpu", "2", "memory", "4Gi"},
	}
	nodes := make([]*corev1.Node, nodeCount)
	var pods []*corev1.Pod
	for i := range nodes {
		nodes[i] = templates[i%len(templates)].Clone().Name(fmt.Sprintf("node-%05d", i)).Obj()
		nodes[i].Labels["kubernetes.io/hostname"] = nodes[i].Name
		for j := range podsPerNode {
			pods = append(pods, makePod(fmt.Sprintf("pod-%05d-%02d", i, j), nodes[i].Name).
				Container(sizes[rng.IntN(len(sizes))]...).Obj())
		}
	}
	return nodes, pods
}

func BenchmarkFullBuild(b *testing.B) {
	nodes, pods := benchFleet(5000, 10)
	var st v1alpha1.ClusterInventoryStatus
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		c, err := NewCluster(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range nodes {
			c.UpsertNode(n)
		}
		for _, p := range pods {
			c.UpsertPod(p)
		}
		st = c.Summarize()
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/op")
	reportStatus(b, st)
}

func reportStatus(b *testing.B, st v1alpha1.ClusterInventoryStatus) {
	raw, err := json.Marshal(st)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(raw)), "bytes-serialized")
	b.ReportMetric(float64(st.ShapeCount), "shapes")
	vectors := 0
	for _, s := range st.NodeShapes {
		vectors += len(s.Free)
	}
	b.ReportMetric(float64(vectors), "free-vectors")
}

func BenchmarkIncrementalPod(b *testing.B) {
	nodes, pods := benchFleet(5000, 10)
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes {
		c.UpsertNode(n)
	}
	for _, p := range pods {
		c.UpsertPod(p)
	}
	c.Summarize()
	extra := makePod("extra", nodes[1234].Name).Container("cpu", "300m", "memory", "700Mi").Obj()
	var st v1alpha1.ClusterInventoryStatus
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			c.UpsertPod(extra)
		} else {
			c.DeletePod(extra.Namespace, extra.Name)
		}
		i++
		st = c.Summarize()
	}
	reportStatus(b, st)
}

func BenchmarkQuery(b *testing.B) {
	nodes, pods := benchFleet(5000, 10)
	st := summarize(b, DefaultConfig(), nodes, pods)
	v := NewView(&st)
	r := mustRequest(b, rl("cpu", "4", "memory", "16Gi", "nvidia.com/gpu", "2"),
		[]corev1.NodeSelectorRequirement{req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "A100-SXM4-80GB")})
	b.ReportAllocs()
	var n int64
	for b.Loop() {
		if ok, _ := v.FitsOnOneNode(r); !ok {
			b.Fatal("the request should fit")
		}
		n, _ = v.MaxReplicas(r)
	}
	b.ReportMetric(float64(n), "replicas")
}

func BenchmarkNewView(b *testing.B) {
	nodes, pods := benchFleet(5000, 10)
	st := summarize(b, DefaultConfig(), nodes, pods)
	b.ReportAllocs()
	for b.Loop() {
		NewView(&st)
	}
}
