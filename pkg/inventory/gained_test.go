package inventory

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

func TestGained(t *testing.T) {
	eight := makeNode("").Resources("cpu", "8", "memory", "32Gi", "pods", "110")
	sixteen := makeNode("").Resources("cpu", "16", "memory", "64Gi", "pods", "110")
	gpu := makeNode("").Resources("cpu", "8", "memory", "32Gi", "pods", "110", "nvidia.com/gpu", "4")
	use := func(node, cpu string) *corev1.Pod {
		return makePod("p-"+node+"-"+cpu, node).Container("cpu", cpu).Obj()
	}
	type report struct {
		nodes []*corev1.Node
		pods  []*corev1.Pod
	}
	cases := map[string]struct {
		old, new report
		want     bool
	}{
		"the same report": {
			old: report{nodes: nodes(2, "n", eight), pods: []*corev1.Pod{use("n-0", "2")}},
			new: report{nodes: nodes(2, "n", eight), pods: []*corev1.Pod{use("n-0", "2")}},
		},
		"less room": {
			old: report{nodes: nodes(2, "n", eight), pods: []*corev1.Pod{use("n-0", "2")}},
			new: report{nodes: nodes(2, "n", eight), pods: []*corev1.Pod{use("n-0", "3")}},
		},
		"a core more on a node": {
			old:  report{nodes: nodes(2, "n", eight), pods: []*corev1.Pod{use("n-0", "2"), use("n-1", "2")}},
			new:  report{nodes: nodes(2, "n", eight), pods: []*corev1.Pod{use("n-0", "1"), use("n-1", "2")}},
			want: true,
		},
		"the room moves to another node of the same kind": {
			old: report{nodes: nodes(2, "n", eight), pods: []*corev1.Pod{use("n-0", "2")}},
			new: report{nodes: nodes(2, "n", eight), pods: []*corev1.Pod{use("n-1", "2")}},
		},
		"a node is added": {
			old:  report{nodes: nodes(2, "n", eight)},
			new:  report{nodes: nodes(3, "n", eight)},
			want: true,
		},
		"a smaller node of the same kind is added": {
			// Its free vector is dominated by the bigger node's, but there are now two nodes
			// with at least that much free: a request of it fits twice.
			old:  report{nodes: nodes(1, "big", sixteen)},
			new:  report{nodes: append(nodes(1, "big", sixteen), nodes(1, "n", eight)...)},
			want: true,
		},
		"a node of the same kind becomes untainted": {
			old:  report{nodes: append(nodes(1, "big", sixteen), nodes(1, "n", eight.Clone().Taint("node.kubernetes.io/not-ready", "", corev1.TaintEffectNoSchedule))...)},
			new:  report{nodes: append(nodes(1, "big", sixteen), nodes(1, "n", eight)...)},
			want: true,
		},
		"a node is removed": {
			old: report{nodes: nodes(3, "n", eight)},
			new: report{nodes: nodes(2, "n", eight)},
		},
		"a node of a new kind, with less room than the others": {
			old:  report{nodes: nodes(2, "n", eight)},
			new:  report{nodes: append(nodes(1, "n", eight), nodes(1, "g", gpu)...)},
			want: true,
		},
		"a node tainted": {
			old: report{nodes: nodes(2, "n", eight)},
			new: report{nodes: append(nodes(1, "n", eight), nodes(1, "t", eight.Clone().Taint("gpu", "true", corev1.TaintEffectNoSchedule))...)},
			// a tainted node admits what tolerates it, which the untainted one admitted too
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			oldSt := summarize(t, DefaultConfig(), tc.old.nodes, tc.old.pods)
			newSt := summarize(t, DefaultConfig(), tc.new.nodes, tc.new.pods)
			if got := NewView(&newSt).Gained(NewView(&oldSt)); got != tc.want {
				t.Errorf("Gained() = %v, want %v", got, tc.want)
			}
		})
	}
	if !NewView(&v1alpha1.ClusterInventoryStatus{}).Gained(nil) {
		t.Error("a first report gained nothing")
	}
}
