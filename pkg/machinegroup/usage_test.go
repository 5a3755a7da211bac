package machinegroup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// labelled is a running pod (or one in state, as podIn knows them) in namespace with labels.
func labelled(namespace, state string, labels map[string]string) *corev1.Pod {
	p := podIn(state)
	p.Namespace, p.Labels = namespace, labels
	return p
}

// TestAvailableMachines counts a group's usage from a list of pods, as PodsOf sorts them.
func TestAvailableMachines(t *testing.T) {
	g := utiltesting.MakeMachineGroup("general-machine").MachineType(
		utiltesting.MakeGroupMachineType("compute-xlarge", "40", "128Gi").Available(2).Obj(),
		utiltesting.MakeGroupMachineType("compute-medium", "6", "48Gi").Available(3).Obj(),
	).Obj()
	cases := map[string]struct {
		pods                 []*corev1.Pod
		reservationNamespace string
		want                 []v1alpha1.AvailableMachine
	}{
		"no pods: every type in spec order, nothing counted": {
			want: []v1alpha1.AvailableMachine{
				{Name: "compute-xlarge", Usage: v1alpha1.MachineUsage{Maximum: 2}},
				{Name: "compute-medium", Usage: v1alpha1.MachineUsage{Maximum: 3}},
			},
		},
		"guests anywhere, reservations only in the reservation namespace": {
			pods: []*corev1.Pod{
				labelled("fleetfit-agent", "running", ReservationLabels("general-machine", "compute-xlarge")),
				labelled("fleetfit-agent", "running", ReservationLabels("general-machine", "compute-xlarge")),
				labelled("elsewhere", "running", ReservationLabels("general-machine", "compute-xlarge")),
				labelled("team-a", "running", GuestLabels("general-machine", "compute-medium", "main")),
				labelled("team-b", "unscheduled", GuestLabels("general-machine", "compute-medium", "")),
			},
			reservationNamespace: "fleetfit-agent",
			want: []v1alpha1.AvailableMachine{
				{Name: "compute-xlarge", Usage: v1alpha1.MachineUsage{Maximum: 2, Reserved: 2}},
				{Name: "compute-medium", Usage: v1alpha1.MachineUsage{Maximum: 3, Used: 1, Waiting: 1}},
			},
		},
		"reservations in any namespace when none is given": {
			pods: []*corev1.Pod{
				labelled("a", "running", ReservationLabels("general-machine", "compute-medium")),
				labelled("b", "creating", ReservationLabels("general-machine", "compute-medium")),
			},
			want: []v1alpha1.AvailableMachine{
				{Name: "compute-xlarge", Usage: v1alpha1.MachineUsage{Maximum: 2}},
				{Name: "compute-medium", Usage: v1alpha1.MachineUsage{Maximum: 3, Reserved: 2}},
			},
		},
		"pods of other groups, other types, other roles or unlabelled count nowhere": {
			pods: []*corev1.Pod{
				labelled("a", "running", GuestLabels("other-group", "compute-xlarge", "")),
				labelled("a", "running", GuestLabels("general-machine", "compute-small", "")),
				labelled("a", "running", map[string]string{LabelMachineGroup: "general-machine", LabelMachineType: "compute-xlarge", LabelPodRole: "visitor"}),
				labelled("a", "running", map[string]string{LabelMachineGroup: "general-machine", LabelPodRole: PodRoleGuest}),
				labelled("a", "running", nil),
			},
			want: []v1alpha1.AvailableMachine{
				{Name: "compute-xlarge", Usage: v1alpha1.MachineUsage{Maximum: 2}},
				{Name: "compute-medium", Usage: v1alpha1.MachineUsage{Maximum: 3}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := AvailableMachines(g, PodsOf(tc.pods, g.Name, tc.reservationNamespace))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("AvailableMachines (-want,+got):\n%s", diff)
			}
		})
	}
}
