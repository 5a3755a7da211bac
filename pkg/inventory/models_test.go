package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
