package machine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

func TestPoolProblem(t *testing.T) {
	g := makeGroup(makeType("small", "1", "1Gi", 0, 1))
	noCondition := makePool(true, "")
	noCondition.Status.Conditions = nil
	cases := map[string]struct {
		pool *v1alpha1.MachineNodePool
		want *problem
	}{
		"ready": {pool: makePool(true, "")},
		"missing": {want: &problem{ReasonNodePoolMissing,
			"MachineNodePool general-machine-node-pool does not exist yet; the node pool controller creates it from the group"}},
		"not observed yet": {pool: noCondition, want: &problem{ReasonNodePoolNotReady,
			"MachineNodePool general-machine-node-pool has no Ready condition yet"}},
		"not ready, with the pool's message": {pool: makePool(false, "node n1 is in machine group other's pool"), want: &problem{ReasonNodePoolNotReady,
			"MachineNodePool general-machine-node-pool is not Ready: node n1 is in machine group other's pool"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, poolProblem(g, tc.pool), cmp.AllowUnexported(problem{})); diff != "" {
				t.Errorf("poolProblem (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestFitProblems(t *testing.T) {
	xl := makeType("compute-xlarge", "40", "128Gi", 2, 1)
	cases := map[string]struct {
		types []v1alpha1.MachineType
		nodes []*corev1.Node
		// pool overrides makeGroup's pool of one node per type.
		pool []v1alpha1.NodePoolEntry
		want []problem
	}{
		"fits": {
			types: []v1alpha1.MachineType{xl},
			nodes: []*corev1.Node{makeNode("node-compute-xlarge", "48", "256Gi", "2")},
		},
		"cpu short on every node": {
			types: []v1alpha1.MachineType{xl},
			pool:  poolOf("compute-xlarge", "a", "b"),
			nodes: []*corev1.Node{makeNode("a", "32", "256Gi", "2"), makeNode("b", "16", "256Gi", "2")},
			want: []problem{{ReasonMachineTypeTooLarge,
				"machine type compute-xlarge needs 40 cpu but the largest pool node of that type has 32 allocatable"}},
		},
		"no gpus": {
			types: []v1alpha1.MachineType{xl},
			nodes: []*corev1.Node{makeNode("node-compute-xlarge", "48", "256Gi", "")},
			want: []problem{{ReasonMachineTypeTooLarge,
				"machine type compute-xlarge needs 2 nvidia.com/gpu but the largest pool node of that type has 0 allocatable"}},
		},
		"one node fits among many": {
			types: []v1alpha1.MachineType{xl},
			pool:  poolOf("compute-xlarge", "a", "b"),
			nodes: []*corev1.Node{makeNode("a", "32", "256Gi", "2"), makeNode("b", "64", "256Gi", "4")},
		},
		"each resource somewhere, all of them nowhere": {
			types: []v1alpha1.MachineType{xl},
			pool:  poolOf("compute-xlarge", "a", "b"),
			nodes: []*corev1.Node{makeNode("a", "32", "256Gi", "2"), makeNode("b", "64", "64Gi", "2")},
			want: []problem{{ReasonMachineTypeTooLarge,
				"machine type compute-xlarge fits no pool node of that type: each has some of what it needs, none all of it (node a has 32 cpu allocatable, it needs 40)"}},
		},
		"missing nodes are the pool's problem": {
			types: []v1alpha1.MachineType{xl},
		},
		"a type with machines but no pool node": {
			types: []v1alpha1.MachineType{xl, makeType("spare", "1", "1Gi", 0, 0)},
			pool:  poolOf("spare", "a"),
			nodes: []*corev1.Node{makeNode("a", "4", "8Gi", "")},
			want:  []problem{{ReasonMachineTypeNoNode, "machine type compute-xlarge has 1 available but no node in the pool"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := makeGroup(tc.types...)
			if tc.pool != nil {
				g.Spec.NodePools = tc.pool
			}
			nodes := map[string]*corev1.Node{}
			for _, n := range tc.nodes {
				nodes[n.Name] = n
			}
			got := fitProblems(g, func(name string) *corev1.Node { return nodes[name] })
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(problem{})); diff != "" {
				t.Errorf("fitProblems (-want,+got):\n%s", diff)
			}
		})
	}
}

func poolOf(machineType string, nodes ...string) []v1alpha1.NodePoolEntry {
	var out []v1alpha1.NodePoolEntry
	for _, n := range nodes {
		out = append(out, v1alpha1.NodePoolEntry{Name: n, MachineType: []v1alpha1.MachineTypeRef{{Name: machineType}}})
	}
	return out
}

func TestComputeStatus(t *testing.T) {
	earlier := metav1.NewTime(testNow.Add(-time.Hour))
	usage := []v1alpha1.AvailableMachine{{Name: "small", Usage: v1alpha1.MachineUsage{Maximum: 1, Reserved: 1}}}
	cases := map[string]struct {
		conditions []metav1.Condition
		problems   []problem
		want       metav1.Condition
	}{
		"ready": {
			want: metav1.Condition{Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, Message: readyMessage,
				ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(testNow)},
		},
		"still ready: the transition time stays": {
			conditions: []metav1.Condition{{Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, LastTransitionTime: earlier}},
			want: metav1.Condition{Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, Message: readyMessage,
				ObservedGeneration: 3, LastTransitionTime: earlier},
		},
		"problems: the first gives the reason, all the message": {
			conditions: []metav1.Condition{{Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReady, LastTransitionTime: earlier}},
			problems:   []problem{{ReasonNodePoolNotReady, "pool is not Ready"}, {ReasonMachineTypeTooLarge, "xl needs 40 cpu"}},
			want: metav1.Condition{Type: machinegroup.ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNodePoolNotReady,
				Message: "pool is not Ready; xl needs 40 cpu", ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(testNow)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := makeGroup(makeType("small", "1", "1Gi", 0, 1))
			g.Generation = 3
			g.Status.Conditions = tc.conditions
			want := v1alpha1.MachineGroupStatus{ObservedGeneration: 3, NodeCount: 1, AvailableMachines: usage, Conditions: []metav1.Condition{tc.want}}
			if diff := cmp.Diff(want, computeStatus(g, usage, tc.problems, testNow)); diff != "" {
				t.Errorf("computeStatus (-want,+got):\n%s", diff)
			}
		})
	}
}
