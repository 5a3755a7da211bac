package inventory

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// nodes returns n copies of w named prefix-0 … prefix-(n-1).
func nodes(n int, prefix string, w *nodeWrapper) []*corev1.Node {
	out := make([]*corev1.Node, n)
	for i := range out {
		out[i] = w.Clone().Name(fmt.Sprintf("%s-%d", prefix, i)).Obj()
	}
	return out
}

type answers struct {
	Fits     bool
	Reason   string
	Replicas int64
	Exact    bool
}

func ask(t *testing.T, st v1alpha1.ClusterInventoryStatus, r *Request) answers {
	t.Helper()
	before := st.DeepCopy()
	v := NewView(&st)
	var a answers
	a.Fits, a.Reason = v.FitsOnOneNode(r)
	a.Replicas, a.Exact = v.MaxReplicas(r)
	if diff := cmp.Diff(*before, st); diff != "" {
		t.Errorf("the view changed the status (-before,+after):\n%s", diff)
	}
	return a
}

func TestViewQueries(t *testing.T) {
	eight := makeNode("").Resources("cpu", "8", "memory", "32Gi", "pods", "110")
	a100 := makeNode("").Resources("cpu", "8", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4").
		Label("nvidia.com/gpu.product", "A100")
	gpuProduct := func(op corev1.NodeSelectorOperator, v ...string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{req("nvidia.com/gpu.product", op, v...)}
	}
	truncating := DefaultConfig()
	truncating.MaxFreeVectorsPerShape = 1

	cases := map[string]struct {
		cfg         Config
		nodes       []*corev1.Node
		pods        []*corev1.Pod
		resources   corev1.ResourceList
		features    []corev1.NodeSelectorRequirement
		tolerations []corev1.Toleration
		want        answers
	}{
		"ten 8-cpu nodes cannot take a 12-cpu pod": {
			nodes:     nodes(10, "small", eight),
			resources: rl("cpu", "12"),
			want:      answers{Reason: "no schedulable node has 12 cpu free; the best has 8", Exact: true},
		},
		"two 16-cpu nodes can take a 12-cpu pod": {
			nodes:     nodes(2, "big", makeNode("").Resources("cpu", "16", "memory", "64Gi", "pods", "110")),
			resources: rl("cpu", "12"),
			want:      answers{Fits: true, Replicas: 2, Exact: true},
		},
		"aggregate room is not room: ten 8-cpu nodes take 10, not 16, 5-cpu replicas": {
			nodes:     nodes(10, "small", eight),
			resources: rl("cpu", "5"),
			want:      answers{Fits: true, Replicas: 10, Exact: true},
		},
		"replicas pack several per node": {
			nodes:     nodes(10, "small", eight),
			resources: rl("cpu", "2", "memory", "10Gi"),
			want:      answers{Fits: true, Replicas: 30, Exact: true},
		},
		"pod slots limit packing": {
			nodes:     nodes(2, "tiny", makeNode("").Resources("cpu", "8", "pods", "3")),
			pods:      []*corev1.Pod{makePod("p", "tiny-0").Obj()},
			resources: rl("cpu", "100m"),
			want:      answers{Fits: true, Replicas: 5, Exact: true},
		},
		"a GPU node without free cpu and a cpu node without GPUs are no fit": {
			nodes: []*corev1.Node{
				a100.Clone().Name("gpu").Obj(),
				eight.Clone().Name("cpu").Obj(),
			},
			pods:      []*corev1.Pod{makePod("hog", "gpu").Container("cpu", "8").Obj()},
			resources: rl("cpu", "1", "nvidia.com/gpu", "1"),
			want: answers{Exact: true, Reason: "no schedulable node has 1 cpu, 1 nvidia.com/gpu, 1 pods free at once; " +
				"the closest has 0 cpu, 4 nvidia.com/gpu, 109 pods"},
		},
		"features narrow the nodes and appear in the reason": {
			nodes: []*corev1.Node{
				a100.Clone().Name("a100").Obj(),
				makeNode("big").Resources("cpu", "64", "pods", "110").Obj(),
			},
			pods:      []*corev1.Pod{makePod("p", "a100").Container("cpu", "2").Obj()},
			resources: rl("cpu", "8"),
			features:  gpuProduct(corev1.NodeSelectorOpIn, "A100"),
			want:      answers{Exact: true, Reason: "no schedulable node with nvidia.com/gpu.product In [A100] has 8 cpu free; the best has 6"},
		},
		"no node with the features": {
			nodes:     []*corev1.Node{a100.Clone().Name("a100").Obj()},
			resources: rl("cpu", "1"),
			features:  gpuProduct(corev1.NodeSelectorOpIn, "H100"),
			want:      answers{Exact: true, Reason: "no schedulable node with nvidia.com/gpu.product In [H100]"},
		},
		"NotIn and DoesNotExist pass nodes without the label": {
			nodes:     []*corev1.Node{a100.Clone().Name("a100").Obj(), eight.Clone().Name("plain").Obj()},
			resources: rl("cpu", "8"),
			features: []corev1.NodeSelectorRequirement{
				req("nvidia.com/gpu.product", corev1.NodeSelectorOpNotIn, "A100"),
				req("nvidia.com/gpu.count", corev1.NodeSelectorOpDoesNotExist),
			},
			want: answers{Fits: true, Replicas: 1, Exact: true},
		},
		"unschedulable nodes are no room": {
			nodes:     []*corev1.Node{eight.Clone().Name("down").NotReady().Obj(), eight.Clone().Name("cordoned").Cordoned().Obj()},
			resources: rl("cpu", "1"),
			want:      answers{Exact: true, Reason: "no schedulable node"},
		},
		"untolerated taints exclude a node": {
			nodes:     []*corev1.Node{eight.Clone().Name("t").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule).Obj()},
			resources: rl("cpu", "1"),
			want:      answers{Exact: true, Reason: "every schedulable node has a taint the request does not tolerate, e.g. dedicated=ml:NoSchedule"},
		},
		"tolerated taints and PreferNoSchedule do not": {
			nodes: []*corev1.Node{eight.Clone().Name("t").Taint("dedicated", "ml", corev1.TaintEffectNoSchedule).
				Taint("soft", "", corev1.TaintEffectPreferNoSchedule).Obj()},
			resources:   rl("cpu", "1"),
			tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}},
			want:        answers{Fits: true, Replicas: 8, Exact: true},
		},
		"zero amounts are no constraint": {
			nodes:     nodes(2, "n", eight),
			resources: rl("cpu", "4", "nvidia.com/gpu", "0"),
			want:      answers{Fits: true, Replicas: 4, Exact: true},
		},
		"an untolerated taint with an empty key is named as the obstacle": {
			nodes:     []*corev1.Node{eight.Clone().Name("t").Taint("", "x", corev1.TaintEffectNoSchedule).Obj()},
			resources: rl("cpu", "1"),
			want:      answers{Exact: true, Reason: "every schedulable node has a taint the request does not tolerate, e.g. =x:NoSchedule"},
		},
		"cpu 1e19 fits on no node": {
			nodes:     nodes(2, "n", eight),
			resources: rl("cpu", "1e19"),
			want:      answers{Exact: true, Reason: "no schedulable node has 9223372036854775807m cpu free; the best has 8"},
		},
		"memory 1e308 fits on no node": {
			nodes:     nodes(2, "n", eight),
			resources: rl("memory", "1e308"),
			want:      answers{Exact: true, Reason: "no schedulable node has 9223372036854775807m memory free; the best has 32Gi"},
		},
		"nvidia.com/gpu 1e19 fits on no node": {
			nodes:     []*corev1.Node{a100.Clone().Name("a100").Obj()},
			resources: rl("nvidia.com/gpu", "1e19"),
			want:      answers{Exact: true, Reason: "no schedulable node has 9223372036854775807m nvidia.com/gpu free; the best has 4"},
		},
		"a pod requesting cpu 1e19 fills its node": {
			nodes:     nodes(2, "n", eight),
			pods:      []*corev1.Pod{makePod("hog", "n-0").Container("cpu", "1e19").Obj()},
			resources: rl("cpu", "1"),
			want:      answers{Fits: true, Replicas: 8, Exact: true},
		},
		"a pod requesting 99999999999999999999 GPUs fills its node": {
			nodes:     []*corev1.Node{a100.Clone().Name("a100").Obj()},
			pods:      []*corev1.Pod{makePod("hog", "a100").Container("nvidia.com/gpu", "99999999999999999999").Obj()},
			resources: rl("nvidia.com/gpu", "1"),
			want:      answers{Exact: true, Reason: "no schedulable node has 1 nvidia.com/gpu free; the best has 0"},
		},
		"a node with allocatable cpu 1e19 counts as having the most there can be": {
			nodes:     []*corev1.Node{makeNode("huge").Resources("cpu", "1e19", "pods", "110").Obj()},
			resources: rl("cpu", "1e15"),
			want:      answers{Fits: true, Replicas: 9, Exact: true},
		},
		"a pod requesting cpu 1e709551616 fills its node, quickly": {
			nodes: nodes(2, "n", eight),
			pods: []*corev1.Pod{makePod("hog", "n-0").
				Container("cpu", "1e709551616").Container("cpu", "1", "memory", "1Gi").Overhead("cpu", "-1e709551616").Obj()},
			resources: rl("cpu", "1"),
			want:      answers{Fits: true, Replicas: 8, Exact: true},
		},
		"a node with allocatable cpu 1e709551616 counts as having the most there can be": {
			nodes:     []*corev1.Node{makeNode("huge").Resources("cpu", "1e709551616", "pods", "110").Obj()},
			resources: rl("cpu", "1e15"),
			want:      answers{Fits: true, Replicas: 9, Exact: true},
		},
		"a node with negative allocatable cpu has none": {
			nodes:     []*corev1.Node{makeNode("odd").Resources("cpu", "-8", "memory", "32Gi").Obj()},
			resources: rl("cpu", "1"),
			want:      answers{Exact: true, Reason: "no schedulable node has 1 cpu free; the best has 0"},
		},
		"truncated shapes give a lower bound": {
			cfg:   truncating,
			nodes: nodes(2, "n", eight),
			pods:  []*corev1.Pod{makePod("p", "n-0").Container("cpu", "4").Obj()},
			// The shape reports one vector: two nodes with at least 4 cpu.
			resources: rl("cpu", "4"),
			want:      answers{Fits: true, Replicas: 2, Exact: false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg.MaxFreeVectorsPerShape == 0 {
				cfg = DefaultConfig()
			}
			st := summarize(t, cfg, tc.nodes, tc.pods)
			got := ask(t, st, mustRequest(t, tc.resources, tc.features, tc.tolerations...))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answers (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFreeOnBestNode(t *testing.T) {
	st := summarize(t, DefaultConfig(), []*corev1.Node{
		makeNode("a100").Resources("cpu", "8", "nvidia.com/gpu", "4").Label("nvidia.com/gpu.product", "A100").Obj(),
		makeNode("big").Resources("cpu", "64").Obj(),
		makeNode("down").Resources("cpu", "128").NotReady().Obj(),
		makeNode("tainted").Resources("cpu", "96").Taint("k", "", corev1.TaintEffectNoExecute).Obj(),
	}, []*corev1.Pod{makePod("p", "a100").Container("cpu", "2", "nvidia.com/gpu", "1").Obj()})
	v := NewView(&st)
	type result struct {
		Free  string
		Found bool
	}
	cases := map[string]struct {
		name        corev1.ResourceName
		features    []corev1.NodeSelectorRequirement
		tolerations []corev1.Toleration
		want        result
	}{
		"cpu on any usable node":      {name: "cpu", want: result{"64", true}},
		"a toleration opens a node":   {name: "cpu", tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}, want: result{"96", true}},
		"cpu on A100 nodes":           {name: "cpu", features: []corev1.NodeSelectorRequirement{req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "A100")}, want: result{"6", true}},
		"GPUs":                        {name: "nvidia.com/gpu", want: result{"3", true}},
		"a resource no node has":      {name: "example.com/fpga", want: result{"0", true}},
		"no node with these features": {name: "cpu", features: []corev1.NodeSelectorRequirement{req("nvidia.com/gpu.product", corev1.NodeSelectorOpIn, "H100")}, want: result{"0", false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := NewSelector(tc.features, tc.tolerations)
			if err != nil {
				t.Fatal(err)
			}
			q, found := v.FreeOnBestNode(tc.name, sel)
			if diff := cmp.Diff(tc.want, result{q.String(), found}); diff != "" {
				t.Errorf("FreeOnBestNode (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNewRequestRejects(t *testing.T) {
	cases := map[string]struct {
		resources corev1.ResourceList
		features  []corev1.NodeSelectorRequirement
	}{
		"negative amount": {resources: rl("cpu", "-1")},
		"bad feature":     {resources: rl("cpu", "1"), features: []corev1.NodeSelectorRequirement{req("k", corev1.NodeSelectorOpGt, "x")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := NewRequest(tc.resources, tc.features, nil); err == nil {
				t.Error("NewRequest accepted an invalid request")
			}
		})
	}
}
