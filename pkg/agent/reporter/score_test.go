package reporter

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/inventory"
)

func node(name string, cpu, gpus string, taints ...corev1.Taint) *corev1.Node {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}
	if gpus != "" {
		alloc[ResourceGPU] = resource.MustParse(gpus)
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}

func pod(name, node, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
}

func TestScores(t *testing.T) {
	gpuTaint := corev1.Taint{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	cases := map[string]struct {
		nodes []*corev1.Node
		pods  []*corev1.Pod
		ref   ScoreReference
		want  []int32 // cpuFree, cpuFreeBestNode, memoryFree, memoryFreeBestNode, gpuFree, gpuFreeBestNode
	}{
		"empty cluster scores nothing free": {
			want: []int32{-100, -100, -100, -100, -100, -100},
		},
		"half taken": {
			nodes: []*corev1.Node{node("a", "4", ""), node("b", "4", "")},
			pods:  []*corev1.Pod{pod("p", "a", "4")},
			// cpu: 4 of 8 free is 0; best node 4 of 4 is 100.
			want: []int32{0, 100, 100, 100, -100, -100},
		},
		"fixed reference clamps": {
			nodes: []*corev1.Node{node("a", "4", "2")},
			ref:   ScoreReference{Cluster: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Node: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16")}},
			// cpu: 4 free against 2 clamps to 100; best node 4 of 16 is −50.
			want: []int32{100, -50, 100, 100, 100, 100},
		},
		"tainted nodes are not the best node": {
			nodes: []*corev1.Node{node("a", "4", "2", gpuTaint), node("b", "4", "")},
			pods:  []*corev1.Pod{pod("p", "b", "1")},
			// cpu best node: b has 3 of the largest allocatable 4.
			want: []int32{75, 50, 100, 100, 100, -100},
		},
	}
	names := []string{"cpuFree", "cpuFreeBestNode", "memoryFree", "memoryFreeBestNode", "gpuFree", "gpuFreeBestNode"}
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
			if diff := cmp.Diff(want, Scores(&st, tc.ref)); diff != "" {
				t.Errorf("Scores (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestLinearScoreOfAbsurdAmounts(t *testing.T) {
	cases := map[string]struct {
		free, reference string
		want            int32
	}{
		"half free":                       {free: "2", reference: "4", want: 0},
		"all free":                        {free: "4", reference: "4", want: 100},
		"absurd free of absurd reference": {free: "1e400", reference: "1e400", want: 100},
		"absurd free of a small one":      {free: "1e400", reference: "4", want: 100},
		"nothing free of an absurd one":   {free: "0", reference: "1e400", want: -100},
		"no reference":                    {free: "4", reference: "0", want: -100},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := linearScore(resource.MustParse(tc.free), resource.MustParse(tc.reference)); got != tc.want {
				t.Errorf("linearScore(%s, %s) = %d, want %d", tc.free, tc.reference, got, tc.want)
			}
		})
	}
}
