package inventory

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

func TestAmountsByModel(t *testing.T) {
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	gpu := func(name, model, count string) *nodeWrapper {
		return makeNode(name).Resources("cpu", "16", "memory", "64Gi", "nvidia.com/gpu", count).Label("nvidia.com/gpu.product", model)
	}
	c.UpsertNode(gpu("a100-0", "A100", "4").Obj())
	c.UpsertNode(gpu("a100-1", "A100", "4").Obj())
	c.UpsertNode(gpu("t4-0", "T4", "2").Obj())
	c.UpsertNode(makeNode("cpu-0").Resources("cpu", "16", "memory", "64Gi").Obj())
	c.UpsertNode(gpu("t4-1", "T4", "2").Cordoned().Obj())
	c.UpsertPod(makePod("train", "a100-0").Container("nvidia.com/gpu", "3").Obj())
	st := c.Summarize()

	got := AmountsByModel(&st, "nvidia.com/gpu", "nvidia.com/gpu.product")
	want := []ModelAmount{
		{Model: "A100", Nodes: 2, Allocatable: 8, Free: 5},
		{Model: "T4", Nodes: 2, Allocatable: 4, Free: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AmountsByModel (-want,+got):\n%s", diff)
	}
}

// TestAmountsByModelSaturates reads reports that no agent writes but a
// fleet file may hold: sums that overflow saturate, and negative counts and
// amounts are zero.
func TestAmountsByModelSaturates(t *testing.T) {
	shape := func(model string, nodes int32, allocatable string, free ...v1alpha1.FreeVector) v1alpha1.NodeShape {
		return v1alpha1.NodeShape{
			Name: model, NodeCount: nodes, Schedulable: true,
			Labels:      map[string]string{"nvidia.com/gpu.product": model},
			Allocatable: rl("nvidia.com/gpu", allocatable),
			Free:        free,
		}
	}
	free := func(count int32, amount string) v1alpha1.FreeVector {
		return v1alpha1.FreeVector{Count: count, Resources: rl("nvidia.com/gpu", amount)}
	}
	cases := map[string]struct {
		shapes []v1alpha1.NodeShape
		want   []ModelAmount
	}{
		"1e19 GPUs on two nodes count as the most a node can have, twice": {
			shapes: []v1alpha1.NodeShape{shape("A100", 2, "1e19", free(2, "1e19"))},
			want:   []ModelAmount{{Model: "A100", Nodes: 2, Allocatable: 2 * 9223372036854776, Free: 2 * 9223372036854775}},
		},
		"1e19 GPUs on MaxInt32 nodes saturate": {
			shapes: []v1alpha1.NodeShape{shape("A100", math.MaxInt32, "1e19", free(math.MaxInt32, "1e19"))},
			want:   []ModelAmount{{Model: "A100", Nodes: math.MaxInt32, Allocatable: math.MaxInt64, Free: math.MaxInt64}},
		},
		"node counts beyond int32": {
			shapes: []v1alpha1.NodeShape{
				shape("A100", math.MaxInt32, "8", free(math.MaxInt32, "8")),
				shape("A100", 2, "8", free(2, "8")),
			},
			want: []ModelAmount{{Model: "A100", Nodes: math.MaxInt32, Allocatable: 8*math.MaxInt32 + 16, Free: 8*math.MaxInt32 + 16}},
		},
		"negative counts and amounts are zero": {
			shapes: []v1alpha1.NodeShape{
				shape("A100", -3, "8", free(-3, "8")),
				shape("A100", 2, "8", free(2, "-8")),
			},
			want: []ModelAmount{{Model: "A100", Nodes: 2, Allocatable: 16}},
		},
		"half a device allocatable counts as one, free as none": {
			shapes: []v1alpha1.NodeShape{shape("T4", 1, "500m", free(1, "500m"))},
			want:   []ModelAmount{{Model: "T4", Nodes: 1, Allocatable: 1}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &v1alpha1.ClusterInventoryStatus{NodeShapes: tc.shapes}
			got := AmountsByModel(st, corev1.ResourceName("nvidia.com/gpu"), "nvidia.com/gpu.product")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AmountsByModel (-want,+got):\n%s", diff)
			}
		})
	}
}
