package inventory

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// anonymize clears shape names (hashes, tested on their own) and orders
// shapes by content, so expectations can be written without hashes.
func anonymize(st v1alpha1.ClusterInventoryStatus) v1alpha1.ClusterInventoryStatus {
	st = *st.DeepCopy()
	for i := range st.NodeShapes {
		st.NodeShapes[i].Name = ""
	}
	slices.SortFunc(st.NodeShapes, func(a, b v1alpha1.NodeShape) int {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		return strings.Compare(string(ja), string(jb))
	})
	return st
}

func totals(name, capacity, allocatable, requested, free string) v1alpha1.ResourceTotals {
	return v1alpha1.ResourceTotals{
		Name:        corev1.ResourceName(name),
		Capacity:    resource.MustParse(capacity),
		Allocatable: resource.MustParse(allocatable),
		Requested:   resource.MustParse(requested),
		Free:        resource.MustParse(free),
	}
}

func TestSummarize(t *testing.T) {
	small := makeNode("n").Resources("cpu", "8", "memory", "16Gi", "pods", "110")
	withCap := func(n int) Config { c := DefaultConfig(); c.MaxFreeVectorsPerShape = n; return c }
	wholeCPU := DefaultConfig()
	wholeCPU.RoundingSteps[corev1.ResourceCPU] = resource.MustParse("1")
	budget := DefaultConfig()
	budget.MaxFreeVectors = 2
	cases := map[string]struct {
		cfg   Config
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  v1alpha1.ClusterInventoryStatus
	}{
		"not ready and cordoned nodes are unschedulable; taints alone are not": {
			cfg: DefaultConfig(),
			nodes: []*corev1.Node{
				small.Clone().Name("ready").Obj(),
				small.Clone().Name("notready").NotReady().Obj(),
				small.Clone().Name("cordoned").Cordoned().Obj(),
				small.Clone().Name("tainted").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj(),
			},
			pods: []*corev1.Pod{
				makePod("a", "ready").Container("cpu", "1").Obj(),
				makePod("b", "notready").Container("cpu", "1").Obj(),
			},
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 4, ReadyNodeCount: 2, ShapeCount: 3,
				Resources: []v1alpha1.ResourceTotals{
					totals("cpu", "32", "32", "2", "15"),
					totals("memory", "64Gi", "64Gi", "0", "32Gi"),
					totals("pods", "440", "440", "2", "219"),
				},
				NodeShapes: []v1alpha1.NodeShape{
					{NodeCount: 2, Allocatable: rl("cpu", "8", "memory", "16Gi", "pods", "110"),
						Free: []v1alpha1.FreeVector{
							{Count: 1, Resources: rl("cpu", "8", "memory", "16Gi", "pods", "110")},
							{Count: 1, Resources: rl("cpu", "7", "memory", "16Gi", "pods", "109")},
						}},
					{NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "8", "memory", "16Gi", "pods", "110"),
						Free: []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "7", "memory", "16Gi", "pods", "109")}}},
					{NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "8", "memory", "16Gi", "pods", "110"),
						Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
						Free:   []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "8", "memory", "16Gi", "pods", "110")}}},
				},
			},
		},
		"default prefixes select feature labels; other labels do not split shapes": {
			cfg: DefaultConfig(),
			nodes: []*corev1.Node{
				makeNode("a").Resources("cpu", "4").
					Label("feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true").
					Label("nvidia.com/gpu.product", "A100").
					Label("node.kubernetes.io/instance-type", "p4d").
					Label("topology.kubernetes.io/zone", "z1").
					Label("fleetfit.io/pool", "gpu").
					Label("kubernetes.io/hostname", "a").
					Label("nvidia.com/gpu", "not-a-feature").Obj(),
				makeNode("b").Resources("cpu", "4").
					Label("feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true").
					Label("nvidia.com/gpu.product", "A100").
					Label("node.kubernetes.io/instance-type", "p4d").
					Label("topology.kubernetes.io/zone", "z1").
					Label("fleetfit.io/pool", "gpu").
					Label("kubernetes.io/hostname", "b").Obj(),
			},
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 2, ReadyNodeCount: 2, ShapeCount: 1,
				Resources: []v1alpha1.ResourceTotals{totals("cpu", "8", "8", "0", "8")},
				NodeShapes: []v1alpha1.NodeShape{{
					NodeCount: 2, Schedulable: true, Allocatable: rl("cpu", "4"),
					Labels: map[string]string{
						"feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true",
						"nvidia.com/gpu.product":                       "A100",
						"node.kubernetes.io/instance-type":             "p4d",
						"topology.kubernetes.io/zone":                  "z1",
						"fleetfit.io/pool":                             "gpu",
					},
					Free: []v1alpha1.FreeVector{{Count: 2, Resources: rl("cpu", "4")}},
				}},
			},
		},
		"label keys are reported besides the prefixes, and said so": {
			cfg: Config{FeatureLabelPrefixes: []string{"example.com/"}, FeatureLabelKeys: []string{"gpu", "accel/model", "gpu"}, MaxFreeVectorsPerShape: 4},
			nodes: []*corev1.Node{
				makeNode("a").Resources("cpu", "4").Label("gpu", "a100").Label("gpu-extra", "x").Label("accel/model", "m1").Obj(),
				makeNode("b").Resources("cpu", "4").Label("example.com/gen", "2").Label("gpus", "1").Obj(),
			},
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 2, ReadyNodeCount: 2, ShapeCount: 2,
				ReportedLabels: &v1alpha1.ReportedLabels{Prefixes: []string{"example.com/"}, Keys: []string{"accel/model", "gpu"}},
				Resources:      []v1alpha1.ResourceTotals{totals("cpu", "8", "8", "0", "8")},
				NodeShapes: []v1alpha1.NodeShape{
					{NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "4"), Labels: map[string]string{"accel/model": "m1", "gpu": "a100"},
						Free: []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "4")}}},
					{NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "4"), Labels: map[string]string{"example.com/gen": "2"},
						Free: []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "4")}}},
				},
			},
		},
		"custom prefixes; feature values and allocatable split shapes": {
			cfg: Config{FeatureLabelPrefixes: []string{"example.com/"}, MaxFreeVectorsPerShape: 4},
			nodes: []*corev1.Node{
				makeNode("a").Resources("cpu", "4").Label("example.com/gen", "1").Label("fleetfit.io/pool", "x").Obj(),
				makeNode("b").Resources("cpu", "4").Label("example.com/gen", "2").Obj(),
				makeNode("c").Resources("cpu", "8").Label("example.com/gen", "2").Obj(),
			},
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 3, ReadyNodeCount: 3, ShapeCount: 3,
				Resources: []v1alpha1.ResourceTotals{totals("cpu", "16", "16", "0", "16")},
				NodeShapes: []v1alpha1.NodeShape{
					{NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "4"), Labels: map[string]string{"example.com/gen": "1"},
						Free: []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "4")}}},
					{NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "4"), Labels: map[string]string{"example.com/gen": "2"},
						Free: []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "4")}}},
					{NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "8"), Labels: map[string]string{"example.com/gen": "2"},
						Free: []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "8")}}},
				},
			},
		},
		"taints differing only in timeAdded share a shape": {
			cfg: DefaultConfig(),
			nodes: func() []*corev1.Node {
				a := makeNode("a").Resources("cpu", "4").Taint("k", "v", corev1.TaintEffectNoExecute).Obj()
				b := a.DeepCopy()
				b.Name = "b"
				b.Spec.Taints[0].TimeAdded = &metav1.Time{}
				return []*corev1.Node{a, b}
			}(),
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 2, ReadyNodeCount: 2, ShapeCount: 1,
				Resources: []v1alpha1.ResourceTotals{totals("cpu", "8", "8", "0", "8")},
				NodeShapes: []v1alpha1.NodeShape{{
					NodeCount: 2, Schedulable: true, Allocatable: rl("cpu", "4"),
					Taints: []corev1.Taint{{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}},
					Free:   []v1alpha1.FreeVector{{Count: 2, Resources: rl("cpu", "4")}},
				}},
			},
		},
		"free is rounded down to the grid in shapes but not in totals": {
			cfg:   DefaultConfig(),
			nodes: []*corev1.Node{makeNode("a").Resources("cpu", "8", "memory", "16Gi", "nvidia.com/gpu", "4").Obj()},
			pods: []*corev1.Pod{
				makePod("p", "a").Container("cpu", "150m", "memory", "100Mi", "nvidia.com/gpu", "1").Obj(),
			},
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 1, ReadyNodeCount: 1, ShapeCount: 1,
				Resources: []v1alpha1.ResourceTotals{
					totals("cpu", "8", "8", "150m", "7850m"),
					totals("memory", "16Gi", "16Gi", "100Mi", "16284Mi"),
					totals("nvidia.com/gpu", "4", "4", "1", "3"),
					totals("pods", "0", "0", "1", "0"),
				},
				NodeShapes: []v1alpha1.NodeShape{{
					NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "8", "memory", "16Gi", "nvidia.com/gpu", "4"),
					Free: []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "7800m", "memory", "16256Mi", "nvidia.com/gpu", "3")}},
				}},
			},
		},
		"the grid is configurable": {
			cfg:   wholeCPU,
			nodes: []*corev1.Node{makeNode("a").Resources("cpu", "8").Obj()},
			pods:  []*corev1.Pod{makePod("p", "a").Container("cpu", "150m").Obj()},
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 1, ReadyNodeCount: 1, ShapeCount: 1,
				Resources: []v1alpha1.ResourceTotals{
					totals("cpu", "8", "8", "150m", "7850m"),
					totals("pods", "0", "0", "1", "0"),
				},
				NodeShapes: []v1alpha1.NodeShape{{
					NodeCount: 1, Schedulable: true, Allocatable: rl("cpu", "8"),
					Free: []v1alpha1.FreeVector{{Count: 1, Resources: rl("cpu", "7")}},
				}},
			},
		},
		"over the cap, vectors merge into their minimum and the shape is truncated": {
			cfg: withCap(2),
			nodes: []*corev1.Node{
				makeNode("a").Resources("cpu", "8").Obj(), makeNode("b").Resources("cpu", "8").Obj(),
				makeNode("c").Resources("cpu", "8").Obj(), makeNode("d").Resources("cpu", "8").Obj(),
			},
			pods: []*corev1.Pod{
				makePod("b", "b").Container("cpu", "2").Obj(),
				makePod("c", "c").Container("cpu", "4").Obj(),
				makePod("d", "d").Container("cpu", "6").Obj(),
			},
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 4, ReadyNodeCount: 4, ShapeCount: 1,
				Resources: []v1alpha1.ResourceTotals{
					totals("cpu", "32", "32", "12", "20"),
					totals("pods", "0", "0", "3", "0"),
				},
				NodeShapes: []v1alpha1.NodeShape{{
					NodeCount: 4, Schedulable: true, Allocatable: rl("cpu", "8"), Truncated: true,
					Free: []v1alpha1.FreeVector{
						{Count: 2, Resources: rl("cpu", "6")},
						{Count: 2, Resources: rl("cpu", "2")},
					},
				}},
			},
		},
		"a cluster-wide budget shares the vectors among shapes": {
			cfg: budget,
			nodes: []*corev1.Node{
				makeNode("a").Resources("cpu", "8").Obj(), makeNode("b").Resources("cpu", "8").Obj(),
				makeNode("c").Resources("cpu", "4").Obj(), makeNode("d").Resources("cpu", "4").Obj(),
			},
			pods: []*corev1.Pod{
				makePod("b", "b").Container("cpu", "2").Obj(),
				makePod("d", "d").Container("cpu", "1").Obj(),
			},
			want: v1alpha1.ClusterInventoryStatus{
				NodeCount: 4, ReadyNodeCount: 4, ShapeCount: 2,
				Resources: []v1alpha1.ResourceTotals{
					totals("cpu", "24", "24", "3", "21"),
					totals("pods", "0", "0", "2", "0"),
				},
				NodeShapes: []v1alpha1.NodeShape{
					{NodeCount: 2, Schedulable: true, Allocatable: rl("cpu", "4"), Truncated: true,
						Free: []v1alpha1.FreeVector{{Count: 2, Resources: rl("cpu", "3")}}},
					{NodeCount: 2, Schedulable: true, Allocatable: rl("cpu", "8"), Truncated: true,
						Free: []v1alpha1.FreeVector{{Count: 2, Resources: rl("cpu", "6")}}},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.want.ReportedLabels == nil {
				// Every report says what it selects; cases about other things
				// report their configured prefixes.
				tc.want.ReportedLabels = &v1alpha1.ReportedLabels{Prefixes: tc.cfg.FeatureLabelPrefixes}
			}
			got := summarize(t, tc.cfg, tc.nodes, tc.pods)
			if diff := cmp.Diff(anonymize(tc.want), anonymize(got)); diff != "" {
				t.Errorf("Summarize (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestShapeNames(t *testing.T) {
	var nodes []*corev1.Node
	for i := range 30 {
		nodes = append(nodes, makeNode(fmt.Sprintf("n%d", i)).
			Resources("cpu", fmt.Sprint(4*(1+i%5))).Label("fleetfit.io/gen", fmt.Sprint(i%3)).Obj())
	}
	forward := summarize(t, DefaultConfig(), nodes, nil)
	reversed := slices.Clone(nodes)
	slices.Reverse(reversed)
	backward := summarize(t, DefaultConfig(), reversed, nil)

	if diff := cmp.Diff(forward, backward); diff != "" {
		t.Errorf("summary depends on event order (-forward,+backward):\n%s", diff)
	}
	var names []string
	for _, s := range forward.NodeShapes {
		names = append(names, s.Name)
	}
	if len(names) != 15 {
		t.Errorf("got %d shapes, want 15", len(names))
	}
	if !slices.IsSorted(names) {
		t.Errorf("shape names not sorted: %v", names)
	}
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("shape names not unique: %v", names)
	}
	short := regexp.MustCompile(`^[0-9a-f]{10}$`)
	for _, n := range names {
		if !short.MatchString(n) {
			t.Errorf("shape name %q is not a short hash", n)
		}
	}
}
