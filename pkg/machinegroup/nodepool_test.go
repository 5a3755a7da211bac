package machinegroup

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestHealth(t *testing.T) {
	cases := map[string]struct {
		mode v1alpha1.NodePoolMode
		node *corev1.Node
		want v1alpha1.NodeHealth
	}{
		"ready node in ready mode": {
			mode: v1alpha1.NodePoolModeReady,
			node: utiltesting.MakeNode("n").Taint("dedicated", "gpu", corev1.TaintEffectNoSchedule).Obj(),
			want: v1alpha1.NodeHealthReady,
		},
		"empty mode is ready": {
			node: utiltesting.MakeNode("n").Obj(),
			want: v1alpha1.NodeHealthReady,
		},
		"maintenance mode": {
			mode: v1alpha1.NodePoolModeMaintenance,
			node: utiltesting.MakeNode("n").Obj(),
			want: v1alpha1.NodeHealthMaintenance,
		},
		"missing node": {
			mode: v1alpha1.NodePoolModeReady,
			want: v1alpha1.NodeHealthNotReady,
		},
		"not-ready taint": {
			mode: v1alpha1.NodePoolModeReady,
			node: utiltesting.MakeNode("n").Taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoExecute).Obj(),
			want: v1alpha1.NodeHealthNotReady,
		},
		"cordoned": {
			mode: v1alpha1.NodePoolModeReady,
			node: utiltesting.MakeNode("n").Taint(corev1.TaintNodeUnschedulable, "", corev1.TaintEffectNoSchedule).Obj(),
			want: v1alpha1.NodeHealthNotReady,
		},
		"network unavailable": {
			mode: v1alpha1.NodePoolModeReady,
			node: utiltesting.MakeNode("n").Taint(corev1.TaintNodeNetworkUnavailable, "", corev1.TaintEffectNoSchedule).Obj(),
			want: v1alpha1.NodeHealthNotReady,
		},
		"unreachable in maintenance": {
			mode: v1alpha1.NodePoolModeMaintenance,
			node: utiltesting.MakeNode("n").Taint(corev1.TaintNodeUnreachable, "", corev1.TaintEffectNoExecute).Obj(),
			want: v1alpha1.NodeHealthNotReady,
		},
		"own not-ready pool taint does not count": {
			mode: v1alpha1.NodePoolModeReady,
			node: utiltesting.MakeNode("n").Taint(LabelNodePool, NodePoolNotReady, corev1.TaintEffectNoSchedule).Obj(),
			want: v1alpha1.NodeHealthReady,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Health(tc.mode, tc.node)); diff != "" {
				t.Errorf("Health (-want,+got):\n%s", diff)
			}
		})
	}
}

func entry(node, machineType string, mode v1alpha1.NodePoolMode, taint bool) *v1alpha1.NodePoolEntry {
	return &v1alpha1.NodePoolEntry{Name: node, Mode: mode, Taint: taint, MachineType: []v1alpha1.MachineTypeRef{{Name: machineType}}}
}

func TestDesiredNodeState(t *testing.T) {
	noSchedule := func(k, v string) corev1.Taint {
		return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffectNoSchedule}
	}
	annotations := map[string]string{AnnotationMachineGroup: "general"}
	cases := map[string]struct {
		entry  *v1alpha1.NodePoolEntry
		health v1alpha1.NodeHealth
		want   NodeState
	}{
		"ready without taint": {
			entry:  entry("n", "compute-xlarge", v1alpha1.NodePoolModeReady, false),
			health: v1alpha1.NodeHealthReady,
			want: NodeState{
				Labels:      map[string]string{"machines.fleetfit.io/compute-xlarge": "general", "machines.fleetfit.io/node-pool": "ready"},
				Annotations: annotations,
			},
		},
		"ready with taint": {
			entry:  entry("n", "compute-xlarge", v1alpha1.NodePoolModeReady, true),
			health: v1alpha1.NodeHealthReady,
			want: NodeState{
				Labels:      map[string]string{"machines.fleetfit.io/compute-xlarge": "general", "machines.fleetfit.io/node-pool": "ready"},
				Annotations: annotations,
				Taints: []corev1.Taint{
					noSchedule("machines.fleetfit.io/compute-xlarge", "general"),
					noSchedule("machines.fleetfit.io/node-pool", "ready"),
				},
			},
		},
		"maintenance with taint": {
			entry:  entry("n", "compute-medium", v1alpha1.NodePoolModeMaintenance, true),
			health: v1alpha1.NodeHealthMaintenance,
			want: NodeState{
				Labels:      map[string]string{"machines.fleetfit.io/compute-medium": "general"},
				Annotations: annotations,
				Taints: []corev1.Taint{
					noSchedule("machines.fleetfit.io/compute-medium", "general"),
					noSchedule("machines.fleetfit.io/node-pool", "maintenance"),
				},
			},
		},
		"not ready with taint": {
			entry:  entry("n", "compute-medium", v1alpha1.NodePoolModeReady, true),
			health: v1alpha1.NodeHealthNotReady,
			want: NodeState{
				Labels:      map[string]string{"machines.fleetfit.io/compute-medium": "general"},
				Annotations: annotations,
				Taints: []corev1.Taint{
					noSchedule("machines.fleetfit.io/compute-medium", "general"),
					noSchedule("machines.fleetfit.io/node-pool", "not-ready"),
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, DesiredNodeState("general", tc.entry, tc.health)); diff != "" {
				t.Errorf("DesiredNodeState (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMergeTaints(t *testing.T) {
	foreign := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	foreignPrefixed := corev1.Taint{Key: Prefix + "other", Value: "x", Effect: corev1.TaintEffectNoExecute}
	typeTaint := corev1.Taint{Key: MachineTypeKey("compute-xlarge"), Value: "general", Effect: corev1.TaintEffectNoSchedule}
	ready := corev1.Taint{Key: LabelNodePool, Value: NodePoolReady, Effect: corev1.TaintEffectNoSchedule}
	notReady := corev1.Taint{Key: LabelNodePool, Value: NodePoolNotReady, Effect: corev1.TaintEffectNoSchedule}
	cases := map[string]struct {
		current, want []corev1.Taint
		merged        []corev1.Taint
		changed       bool
	}{
		"adds after foreign taints": {
			current: []corev1.Taint{foreign},
			want:    []corev1.Taint{typeTaint, ready},
			merged:  []corev1.Taint{foreign, typeTaint, ready},
			changed: true,
		},
		"unchanged in another order": {
			current: []corev1.Taint{ready, foreign, typeTaint},
			want:    []corev1.Taint{typeTaint, ready},
			merged:  []corev1.Taint{ready, foreign, typeTaint},
		},
		"health value changes": {
			current: []corev1.Taint{typeTaint, ready, foreign},
			want:    []corev1.Taint{typeTaint, notReady},
			merged:  []corev1.Taint{foreign, typeTaint, notReady},
			changed: true,
		},
		"removes only own taints": {
			current: []corev1.Taint{typeTaint, foreign, ready, foreignPrefixed},
			merged:  []corev1.Taint{foreign, foreignPrefixed},
			changed: true,
		},
		"nothing to remove": {
			current: []corev1.Taint{foreign},
			merged:  []corev1.Taint{foreign},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			merged, changed := MergeTaints(tc.current, tc.want)
			if diff := cmp.Diff(tc.merged, merged); diff != "" {
				t.Errorf("merged taints (-want,+got):\n%s", diff)
			}
			if changed != tc.changed {
				t.Errorf("changed = %v, want %v", changed, tc.changed)
			}
		})
	}
}

func TestNodeOwner(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	group := func(name string, created time.Time, deleting bool) *v1alpha1.MachineGroup {
		w := utiltesting.MakeMachineGroup(name).Created(created)
		if deleting {
			w.Deleting(created.Add(time.Hour))
		}
		return w.Obj()
	}
	cases := map[string]struct {
		groups []*v1alpha1.MachineGroup
		want   string
	}{
		"none":                  {},
		"one":                   {groups: []*v1alpha1.MachineGroup{group("a", t0, false)}, want: "a"},
		"first created wins":    {groups: []*v1alpha1.MachineGroup{group("a", t0.Add(time.Second), false), group("b", t0, false)}, want: "b"},
		"tie broken by name":    {groups: []*v1alpha1.MachineGroup{group("b", t0, false), group("a", t0, false)}, want: "a"},
		"deleting owns nothing": {groups: []*v1alpha1.MachineGroup{group("a", t0, true), group("b", t0.Add(time.Second), false)}, want: "b"},
		"only deleting":         {groups: []*v1alpha1.MachineGroup{group("a", t0, true)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if o := NodeOwner(tc.groups); o != nil {
				got = o.Name
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("NodeOwner (-want,+got):\n%s", diff)
			}
		})
	}
}
