package machinegroup

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// MachineOf is the role, group and machine type that a pod's labels give it;
// ok is false for a pod that is neither a guest nor a reservation of a
// machine type of a group.
func MachineOf(p *corev1.Pod) (role, group, machineType string, ok bool) {
	l := p.Labels
	role, group, machineType = l[LabelPodRole], l[LabelMachineGroup], l[LabelMachineType]
	if (role != PodRoleGuest && role != PodRoleReservation) || group == "" || machineType == "" {
		return "", "", "", false
	}
	return role, group, machineType, true
}

// PodsOfType returns the pods of one role (PodRoleGuest or PodRoleReservation)
// and machine type of a group.
type PodsOfType func(role, machineType string) []*corev1.Pod

// AvailableMachines is a group's status.availableMachines: the Usage of each
// of its machine types, in spec order, counted from the guests and
// reservations podsOf returns for it. The machine controller passes the pods
// its cache indexes; PodsOf serves a plain list.
func AvailableMachines(g *v1alpha1.MachineGroup, podsOf PodsOfType) []v1alpha1.AvailableMachine {
	available := make([]v1alpha1.AvailableMachine, 0, len(g.Spec.MachineTypes))
	for i := range g.Spec.MachineTypes {
		t := &g.Spec.MachineTypes[i]
		u := Usage(t.Available, podsOf(PodRoleGuest, t.Name), podsOf(PodRoleReservation, t.Name))
		available = append(available, v1alpha1.AvailableMachine{Name: t.Name, Usage: u})
	}
	return available
}

// PodsOf sorts pods by role and machine type for AvailableMachines: the guests
// of group in any namespace, and its reservations in reservationNamespace only
// (where the agent creates them; in any namespace when it is empty). Pods of
// other groups are left out. pods are not modified.
func PodsOf(pods []*corev1.Pod, group, reservationNamespace string) PodsOfType {
	type key struct{ role, machineType string }
	byKey := map[key][]*corev1.Pod{}
	for _, p := range pods {
		role, g, typ, ok := MachineOf(p)
		if !ok || g != group || (role == PodRoleReservation && reservationNamespace != "" && p.Namespace != reservationNamespace) {
			continue
		}
		byKey[key{role, typ}] = append(byKey[key{role, typ}], p)
	}
	return func(role, machineType string) []*corev1.Pod { return byKey[key{role, machineType}] }
}
