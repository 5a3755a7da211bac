package reporter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// TestUsageScoreNormalisation checks the add-on's normalisation on the
// numbers its own tests work out: 40 cpu → −20, 2 GPUs → −80, 1 TPU → −90,
// 524Gi of memory → 100, nothing or less → −100.
func TestUsageScoreNormalisation(t *testing.T) {
	cases := []struct {
		name  string
		milli int64
		max   float64
		want  int32
	}{
		{"40 cpu", 40_000, 100, -20},
		{"524Gi memory", 524 << 30 * 1000, 1024 * 1024, 100},
		{"2 GPUs", 2000, 20, -80},
		{"1 TPU", 1000, 20, -90},
		{"nothing free", 0, 100, -100},
		{"less than nothing", -10_000, 100, -100},
		{"exactly the bound", 100_000, 100, 100},
		{"beyond the bound", 1 << 62, 100, 100},
		// Truncated towards zero: −100 + 200 × 0.3 / 100 = −99.4.
		{"300m cpu", 300, 100, -99},
		// 1 MiB of memory is not above the bound: −100 + 200 × 1048575 / 1048576.
		{"1Mi memory minus a byte", (1<<20 - 1) * 1000, 1024 * 1024, 99},
	}
	for _, tc := range cases {
		if got := usageScore(tc.milli, tc.max); got != tc.want {
			t.Errorf("%s: usageScore(%d, %v) = %d, want %d", tc.name, tc.milli, tc.max, got, tc.want)
		}
	}
}

// TestUsageScores checks the scores of whole clusters, the first being the
// add-on's own example: node1 (16 cpu, 32Gi, 6 GPUs) and node2 (32 cpu, 64Gi,
// 8 GPUs) with a pod of 4 cpu, 8Gi and 2 GPUs on node2.
func TestUsageScores(t *testing.T) {
	gpuNode := func(name, cpu, mem, gpus string, taints ...corev1.Taint) *corev1.Node {
		n := node(name, cpu, gpus, taints...)
		n.Status.Allocatable[corev1.ResourceMemory] = resource.MustParse(mem)
		n.Status.Capacity = n.Status.Allocatable
		return n
	}
	cordoned := gpuNode("cordoned", "64", "64Gi", "8")
	cordoned.Spec.Unschedulable = true
	tpuNode := node("tpu", "8", "")
	tpuNode.Status.Allocatable[ResourceTPU] = resource.MustParse("4")
	trainer := pod("trainer", "node2", "4")
	trainer.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("8Gi")
	trainer.Spec.Containers[0].Resources.Requests[ResourceGPU] = resource.MustParse("2")
	gpuTaint := corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}

	cases := map[string]struct {
		nodes []*corev1.Node
		pods  []*corev1.Pod
		// cpuNode, cpuCluster, memNode, memCluster, gpuNode, gpuCluster, tpuNode, tpuCluster
		want []int32
	}{
		"the add-on's example": {
			nodes: []*corev1.Node{gpuNode("node1", "16", "32Gi", "6"), gpuNode("node2", "32", "64Gi", "8")},
			pods:  []*corev1.Pod{trainer},
			// cpu: node2 has 28 free (−44), the cluster 44 (−12); GPUs: 6 on
			// either node (−40), 12 in all (20); no TPUs.
			want: []int32{-44, -12, 100, 100, -40, 20, -100, -100},
		},
		"cordoned nodes do not count, tainted ones do": {
			nodes: []*corev1.Node{gpuNode("node1", "16", "32Gi", "6", gpuTaint), cordoned},
			want:  []int32{-68, -68, 100, 100, -40, -40, -100, -100},
		},
		"TPUs": {
			nodes: []*corev1.Node{tpuNode},
			want:  []int32{-84, -84, 100, 100, -100, -100, -60, -60},
		},
		"empty cluster": {
			want: []int32{-100, -100, -100, -100, -100, -100, -100, -100},
		},
	}
	names := []string{"cpuNodeAvailable", "cpuClusterAvailable", "memNodeAvailable", "memClusterAvailable",
		"gpuNodeAvailable", "gpuClusterAvailable", "tpuNodeAvailable", "tpuClusterAvailable"}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := inventory.NewCluster(inventory.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tc.nodes {
				c.UpsertNode(n)
			}
			for _, p := range tc.pods {
				c.UpsertPod(p)
			}
			st := c.Summarize()
			want := make([]clusterv1alpha1.AddOnPlacementScoreItem, len(names))
			for i, n := range names {
				want[i] = clusterv1alpha1.AddOnPlacementScoreItem{Name: n, Value: tc.want[i]}
			}
			if diff := cmp.Diff(want, UsageScores(&st)); diff != "" {
				t.Errorf("UsageScores (-want,+got):\n%s", diff)
			}
		})
	}
}
