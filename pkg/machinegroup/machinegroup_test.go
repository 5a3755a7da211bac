package machinegroup

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func machineType(name, cpu, memory string, gpu *v1alpha1.MachineGPU) *v1alpha1.MachineType {
	return &v1alpha1.MachineType{
		Name: name,
		Spec: v1alpha1.MachineTypeSpec{CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory), GPU: gpu},
	}
}

func TestNames(t *testing.T) {
	if got := ReservationName("general-machine", "compute-xlarge"); got != "compute-xlarge-general-machine" {
		t.Errorf("ReservationName: %q", got)
	}
	if got := NodePoolName("general-machine"); got != "general-machine-node-pool" {
		t.Errorf("NodePoolName: %q", got)
	}
	if got := MachineTypeKey("compute-xlarge"); got != "machines.fleetfit.io/compute-xlarge" {
		t.Errorf("MachineTypeKey: %q", got)
	}
	want := map[string]string{LabelMachineGroup: "g", LabelMachineType: "t", LabelPodRole: PodRoleReservation}
	if diff := cmp.Diff(want, ReservationLabels("g", "t")); diff != "" {
		t.Errorf("ReservationLabels (-want,+got):\n%s", diff)
	}
	want = map[string]string{LabelMachineGroup: "g", LabelMachineType: "t", LabelPodRole: PodRoleGuest, LabelInjectingContainer: "c"}
	if diff := cmp.Diff(want, GuestLabels("g", "t", "c")); diff != "" {
		t.Errorf("GuestLabels (-want,+got):\n%s", diff)
	}
}

func TestResources(t *testing.T) {
	cases := map[string]struct {
		t    *v1alpha1.MachineType
		want corev1.ResourceList
	}{
		"cpu and memory": {
			t:    machineType("small", "2", "4Gi", nil),
			want: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		},
		"gpus of the default type": {
			t: machineType("xl", "40000m", "128Gi", &v1alpha1.MachineGPU{Num: 2}),
			want: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("40"), corev1.ResourceMemory: resource.MustParse("128Gi"),
				"nvidia.com/gpu": resource.MustParse("2")},
		},
		"gpus of another extended resource": {
			t: machineType("amd", "8", "16Gi", &v1alpha1.MachineGPU{Type: "amd.com/gpu", Num: 1}),
			want: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"),
				"amd.com/gpu": resource.MustParse("1")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Resources(tc.t), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("Resources (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNodeRequirementsAndTolerations(t *testing.T) {
	in := func(k, v string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}
	}
	base := []corev1.NodeSelectorRequirement{in("machines.fleetfit.io/t", "g"), in(LabelNodePool, NodePoolReady)}
	cases := map[string]struct {
		gpu  *v1alpha1.MachineGPU
		want []corev1.NodeSelectorRequirement
	}{
		"no gpu":         {want: base},
		"gpu, any model": {gpu: &v1alpha1.MachineGPU{Num: 1}, want: base},
		"product":        {gpu: &v1alpha1.MachineGPU{Num: 1, Product: "NVIDIA-GeForce-RTX-3090"}, want: append(base[:2:2], in(GPUProductLabel, "NVIDIA-GeForce-RTX-3090"))},
		"family":         {gpu: &v1alpha1.MachineGPU{Num: 1, Family: "ampere"}, want: append(base[:2:2], in(GPUFamilyLabel, "ampere"))},
		"machine":        {gpu: &v1alpha1.MachineGPU{Num: 1, Machine: "DGX-1"}, want: append(base[:2:2], in(GPUMachineLabel, "DGX-1"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NodeRequirements("g", machineType("t", "1", "1Gi", tc.gpu))); diff != "" {
				t.Errorf("NodeRequirements (-want,+got):\n%s", diff)
			}
		})
	}
	want := []corev1.Toleration{
		{Key: "machines.fleetfit.io/t", Operator: corev1.TolerationOpEqual, Value: "g", Effect: corev1.TaintEffectNoSchedule},
		{Key: LabelNodePool, Operator: corev1.TolerationOpEqual, Value: NodePoolReady, Effect: corev1.TaintEffectNoSchedule},
	}
	if diff := cmp.Diff(want, Tolerations("g", machineType("t", "1", "1Gi", nil))); diff != "" {
		t.Errorf("Tolerations (-want,+got):\n%s", diff)
	}
	// What a pod of the type tolerates is what a ready pool node carries.
	for _, taint := range NodeTaints("g", "t", v1alpha1.NodeHealthReady) {
		tolerated := false
		for _, tol := range want {
			tolerated = tolerated || tol.ToleratesTaint(klog.Background(), &taint, false)
		}
		if !tolerated {
			t.Errorf("the taint %s of a ready node is not tolerated", taint.ToString())
		}
	}
	for _, h := range []v1alpha1.NodeHealth{v1alpha1.NodeHealthNotReady, v1alpha1.NodeHealthMaintenance} {
		taint := NodeTaints("g", "t", h)[1]
		if want[1].ToleratesTaint(klog.Background(), &taint, false) {
			t.Errorf("the taint %s of a %s node is tolerated", taint.ToString(), h)
		}
	}
}

func TestFindType(t *testing.T) {
	g := utiltesting.MakeMachineGroup("g").MachineType(
		utiltesting.MakeGroupMachineType("a", "1", "1Gi").Obj(),
		utiltesting.MakeGroupMachineType("b", "2", "2Gi").Obj(),
	).Obj()
	if got, err := FindType(g, "b"); err != nil || got.Name != "b" {
		t.Errorf("FindType(b) = %v, %v", got, err)
	}
	_, err := FindType(g, "c")
	if want := `machine group g has no machine type "c"; its types are ["a" "b"]`; err == nil || err.Error() != want {
		t.Errorf("FindType(c) error %v, want %s", err, want)
	}
}

// podIn builds a pod in one of the states of Imperator's design.
func podIn(state string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: state}}
	switch state {
	case "running":
		p.Spec.NodeName, p.Status.Phase = "n", corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}
	case "creating":
		p.Spec.NodeName, p.Status.Phase = "n", corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}}
	case "unscheduled":
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	case "new":
	case "deleting":
		p.Spec.NodeName, p.Status.Phase = "n", corev1.PodRunning
		p.DeletionTimestamp = &metav1.Time{}
	case "succeeded":
		p.Spec.NodeName, p.Status.Phase = "n", corev1.PodSucceeded
	case "failed":
		p.Spec.NodeName, p.Status.Phase = "n", corev1.PodFailed
	default:
		panic(state)
	}
	return p
}

func TestStateOf(t *testing.T) {
	cases := map[string]PodState{
		"running":     PodRunning,
		"creating":    PodRunning,
		"unscheduled": PodUnscheduled,
		"new":         PodUnscheduled,
		"deleting":    PodDeleting,
		"succeeded":   PodOther,
		"failed":      PodOther,
	}
	for state, want := range cases {
		t.Run(state, func(t *testing.T) {
			if got := StateOf(podIn(state)); got != want {
				t.Errorf("StateOf = %d, want %d", got, want)
			}
		})
	}
}

func pods(states ...string) []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(states))
	for _, s := range states {
		out = append(out, podIn(s))
	}
	return out
}

func TestUsageAndReservationReplicas(t *testing.T) {
	cases := map[string]struct {
		maximum      int32
		guests       []*corev1.Pod
		reservations []*corev1.Pod
		want         v1alpha1.MachineUsage
		replicas     int32
	}{
		"nothing yet": {
			maximum: 3, want: v1alpha1.MachineUsage{Maximum: 3}, replicas: 3,
		},
		"all reserved": {
			maximum: 2, reservations: pods("running", "creating"),
			want: v1alpha1.MachineUsage{Maximum: 2, Reserved: 2}, replicas: 2,
		},
		"a new guest takes over a reservation": {
			maximum: 2, guests: pods("new"), reservations: pods("running", "running"),
			want: v1alpha1.MachineUsage{Maximum: 2, Reserved: 2, Waiting: 1}, replicas: 1,
		},
		"guests running and waiting": {
			maximum: 4, guests: pods("running", "creating", "unscheduled"), reservations: pods("running"),
			want: v1alpha1.MachineUsage{Maximum: 4, Reserved: 1, Used: 2, Waiting: 1}, replicas: 1,
		},
		"deleting and finished pods count as neither": {
			maximum: 2, guests: pods("deleting", "succeeded", "failed", "running"), reservations: pods("deleting", "unscheduled", "running"),
			want: v1alpha1.MachineUsage{Maximum: 2, Reserved: 1, Used: 1}, replicas: 1,
		},
		"more guests than machines": {
			maximum: 1, guests: pods("running", "unscheduled", "unscheduled"),
			want: v1alpha1.MachineUsage{Maximum: 1, Used: 1, Waiting: 2}, replicas: 0,
		},
		"none available": {
			maximum: 0, want: v1alpha1.MachineUsage{}, replicas: 0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Usage(tc.maximum, tc.guests, tc.reservations)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Usage (-want,+got):\n%s", diff)
			}
			if r := ReservationReplicas(got); r != tc.replicas {
				t.Errorf("ReservationReplicas = %d, want %d", r, tc.replicas)
			}
		})
	}
}

func TestShortfalls(t *testing.T) {
	xl := machineType("xl", "40", "128Gi", &v1alpha1.MachineGPU{Num: 2})
	alloc := func(cpu, mem, gpu string) corev1.ResourceList {
		l := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		if gpu != "" {
			l["nvidia.com/gpu"] = resource.MustParse(gpu)
		}
		return l
	}
	cases := map[string]struct {
		alloc corev1.ResourceList
		want  []corev1.ResourceName
	}{
		"fits exactly":    {alloc: alloc("40", "128Gi", "2")},
		"fits with room":  {alloc: alloc("64", "256Gi", "8")},
		"cpu short":       {alloc: alloc("32", "128Gi", "2"), want: []corev1.ResourceName{"cpu"}},
		"no gpus":         {alloc: alloc("64", "256Gi", ""), want: []corev1.ResourceName{"nvidia.com/gpu"}},
		"all short":       {alloc: alloc("1", "1Gi", "1"), want: []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu"}},
		"memory in bytes": {alloc: alloc("40", fmt.Sprint(int64(128)<<30-1), "2"), want: []corev1.ResourceName{"memory"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []corev1.ResourceName
			for _, s := range Shortfalls(xl, tc.alloc) {
				got = append(got, s.Resource)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Shortfalls (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPoolNodes(t *testing.T) {
	g := utiltesting.MakeMachineGroup("").
		Node("n2", "a", "", false).Node("n1", "b", "", false).Node("n0", "a", "", false).
		Obj()
	if diff := cmp.Diff([]string{"n2", "n0"}, PoolNodes(g, "a")); diff != "" {
		t.Errorf("PoolNodes (-want,+got):\n%s", diff)
	}
	if got := PoolNodes(g, "c"); got != nil {
		t.Errorf("PoolNodes of a type without nodes: %v", got)
	}
}

func reportGroupOf(name string, ready bool, usage ...v1alpha1.AvailableMachine) *v1alpha1.MachineGroup {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	w := utiltesting.MakeMachineGroup(name).
		MachineType(utiltesting.MakeGroupMachineType("b", "2", "2Gi").Obj(), utiltesting.MakeGroupMachineType("a", "1", "1Gi").Obj()).
		Condition(ConditionReady, status, "", "")
	for _, u := range usage {
		w.Usage(u.Name, u.Usage)
	}
	return w.Obj()
}

func TestReport(t *testing.T) {
	used := v1alpha1.MachineUsage{Maximum: 3, Reserved: 1, Used: 1, Waiting: 1}
	spec := func(cpu, mem string) v1alpha1.MachineTypeSpec {
		return machineType("", cpu, mem, nil).Spec
	}
	many := make([]*v1alpha1.MachineGroup, 0, v1alpha1.MaxReportedMachineGroups+3)
	for i := range v1alpha1.MaxReportedMachineGroups + 3 {
		many = append(many, reportGroupOf(fmt.Sprintf("g%02d", v1alpha1.MaxReportedMachineGroups+2-i), true))
	}
	cases := map[string]struct {
		groups      []*v1alpha1.MachineGroup
		wantNames   []string
		wantFirst   *v1alpha1.ReportedMachineGroup
		wantOmitted int32
	}{
		"none": {},
		"sorted by name, types in spec order, usage from status": {
			groups: []*v1alpha1.MachineGroup{
				reportGroupOf("z", false),
				reportGroupOf("m", true, v1alpha1.AvailableMachine{Name: "a", Usage: used}),
			},
			wantNames: []string{"m", "z"},
			wantFirst: &v1alpha1.ReportedMachineGroup{Name: "m", Ready: true, MachineTypes: []v1alpha1.ReportedMachineType{
				{Name: "b", Spec: spec("2", "2Gi")},
				{Name: "a", Spec: spec("1", "1Gi"), Usage: used},
			}},
		},
		"at most MaxReportedMachineGroups, the first by name": {
			groups:      many,
			wantNames:   []string{"g00", "g01", "g02", "g03", "g04", "g05", "g06", "g07", "g08", "g09", "g10", "g11", "g12", "g13", "g14", "g15"},
			wantOmitted: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, omitted := Report(tc.groups)
			var names []string
			for _, g := range got {
				names = append(names, g.Name)
			}
			if diff := cmp.Diff(tc.wantNames, names); diff != "" {
				t.Errorf("reported groups (-want,+got):\n%s", diff)
			}
			if omitted != tc.wantOmitted {
				t.Errorf("omitted %d, want %d", omitted, tc.wantOmitted)
			}
			if tc.wantFirst != nil {
				if diff := cmp.Diff(*tc.wantFirst, got[0]); diff != "" {
					t.Errorf("first group (-want,+got):\n%s", diff)
				}
			}
		})
	}
	if len(many) != v1alpha1.MaxReportedMachineGroups+3 || many[0].Name != "g18" {
		t.Errorf("Report reordered its argument")
	}
}
