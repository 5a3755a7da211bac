package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

func TestSummarizeNodePools(t *testing.T) {
	gpuPool := NodePoolInput{
		Name: "gpu", Provider: "karpenter", Ready: true,
		Labels: map[string]string{"fleetfit.io/pool": "gpu", "team": "ml"},
		Requirements: []corev1.NodeSelectorRequirement{
			{Key: LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"g6.12xlarge", "g6.48xlarge"}},
			{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"zone-a"}},
		},
		Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}},
		Limits: rl("nvidia.com/gpu", "16", "cpu", "1000"),
		Usage:  rl("nvidia.com/gpu", "4", "cpu", "48"),
	}
	types := []InstanceType{
		{Name: "g6.12xlarge", Resources: rl("cpu", "48", "nvidia.com/gpu", "4", "pods", "110")},
		{Name: "g6.48xlarge", Allocatable: rl("cpu", "192", "nvidia.com/gpu", "8", "pods", "110")},
		{Name: "m7i.large", Resources: rl("cpu", "2")},
	}
	reported := func(key string) bool { return key != "team" }
	got, omitted := SummarizeNodePools([]NodePoolInput{gpuPool}, types, nil, reported)
	want := []v1alpha1.ReportedNodePool{{
		Name: "gpu", Provider: "karpenter", Ready: true,
		Labels: map[string]string{"fleetfit.io/pool": "gpu", LabelInstanceType: "g6.12xlarge", "topology.kubernetes.io/zone": "zone-a"},
		Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Effect: corev1.TaintEffectNoSchedule}},
		Limits: gpuPool.Limits, Usage: gpuPool.Usage,
		ShapesFrom: v1alpha1.ShapesFromConfigMap,
		Shapes: []v1alpha1.PoolShape{
			{Name: "g6.12xlarge", Allocatable: types[0].Resources, Labels: map[string]string{LabelInstanceType: "g6.12xlarge"}, MaxNodes: 3},
			{Name: "g6.48xlarge", Allocatable: types[1].Allocatable, Labels: map[string]string{LabelInstanceType: "g6.48xlarge"}, MaxNodes: 1},
		},
	}}
	// The instance-type requirement has two values: it is no label of the pool.
	delete(want[0].Labels, LabelInstanceType)
	if diff := cmp.Diff(want, got); diff != "" || omitted != 0 {
		t.Errorf("pools (-want +got):\n%s (omitted %d)", diff, omitted)
	}

	// Without a catalogue: the nodes the pool launched.
	launched := makeNode("kwok-gpu-1").Resources("cpu", "47", "nvidia.com/gpu", "4", "pods", "110").
		Label(LabelKarpenterNodePool, "gpu").Label(LabelInstanceType, "g6.12xlarge").Label("fleetfit.io/pool", "gpu").Obj()
	other := makeNode("n1").Resources("cpu", "8").Label(LabelInstanceType, "m7i.large").Obj()
	got, _ = SummarizeNodePools([]NodePoolInput{gpuPool}, nil, []*corev1.Node{launched, other}, reported)
	if len(got[0].Shapes) != 1 || got[0].ShapesFrom != v1alpha1.ShapesFromNodes || got[0].Shapes[0].Name != "g6.12xlarge" ||
		got[0].Shapes[0].MaxNodes != 3 {
		t.Errorf("shapes from launched nodes: %+v", got[0])
	}

	// Neither: no shape, and a message that says what to do.
	got, _ = SummarizeNodePools([]NodePoolInput{gpuPool}, nil, []*corev1.Node{other}, reported)
	if len(got[0].Shapes) != 0 || got[0].Message == "" {
		t.Errorf("a pool of unknown shapes: %+v", got[0])
	}
	if v := NewView(&v1alpha1.ClusterInventoryStatus{NodePools: got}); v.CanScaleUp() {
		t.Errorf("a pool of unknown shapes adds room")
	}
}
