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

// AvailableMachines is a group's status.availableMachines: the Usage of each
// of its machine types, in spec order, counted from pods — its guests in any
// namespace, its reservations in reservationNamespace only (where the agent
// creates them; in any namespace when it is empty). Pods of other groups and
// of types the group does not have are ignored. pods are not modified.
func AvailableMachines(g *v1alpha1.MachineGroup, pods []*corev1.Pod, reservationNamespace string) []v1alpha1.AvailableMachine {
	type podsOfType struct{ guests, reservations []*corev1.Pod }
	byType := map[string]*podsOfType{}
	for _, p := range pods {
		role, group, typ, ok := MachineOf(p)
		if !ok || group != g.Name {
			continue
		}
		of := byType[typ]
		if of == nil {
			of = &podsOfType{}
			byType[typ] = of
		}
		switch {
		case role == PodRoleGuest:
			of.guests = append(of.guests, p)
		case reservationNamespace == "" || p.Namespace == reservationNamespace:
			of.reservations = append(of.reservations, p)
		}
	}
	available := make([]v1alpha1.AvailableMachine, 0, len(g.Spec.MachineTypes))
	for i := range g.Spec.MachineTypes {
		t := &g.Spec.MachineTypes[i]
		of := byType[t.Name]
		if of == nil {
			of = &podsOfType{}
		}
		available = append(available, v1alpha1.AvailableMachine{Name: t.Name, Usage: Usage(t.Available, of.guests, of.reservations)})
	}
	return available
}
