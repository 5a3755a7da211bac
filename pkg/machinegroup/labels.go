package machinegroup

import (
	"fmt"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Prefix is the prefix of every label, annotation and taint key that machine
// groups use.
const Prefix = "machines.fleetfit.io/"

// Label, annotation and taint keys, as in the tables of Imperator's design with its prefix
// imperator.tenzen-y.io/ replaced by Prefix (and its nodePool key spelled node-pool).
const (
	// LabelMachineGroup names the group of a guest pod, a reservation object
	// or a MachineNodePool. On a Node it is an annotation (AnnotationMachineGroup).
	LabelMachineGroup = Prefix + "machine-group"
	// LabelMachineType names the machine type of a guest or a reservation.
	LabelMachineType = Prefix + "machine-type"
	// LabelPodRole is PodRoleReservation or PodRoleGuest.
	LabelPodRole = Prefix + "pod-role"
	// LabelNodePool is NodePoolReady on a pool node that takes reservations
	// and guests; as a taint key (with taint: true) its value is the node's health.
	LabelNodePool = Prefix + "node-pool"
	// LabelInjectingContainer names the guest's container that gets the
	// machine type's resources; the first container by default.
	LabelInjectingContainer = Prefix + "injecting-container"
	// AnnotationMachineGroup names the group a Node belongs to.
	AnnotationMachineGroup = Prefix + "machine-group"
	// LabelInjectResource on a Namespace, with the value InjectResourceEnabled,
	// opts its guest pods in to the pod resource injector.
	LabelInjectResource = Prefix + "inject-resource"
	// InjectResourceEnabled is LabelInjectResource's opt-in value.
	InjectResourceEnabled = "enabled"
)

// Values of LabelPodRole.
const (
	PodRoleReservation = "reservation"
	PodRoleGuest       = "guest"
)

// Values of LabelNodePool: on a node's label only NodePoolReady is ever set;
// a node pool taint (with taint: true) carries the node's health.
const (
	NodePoolReady       = "ready"
	NodePoolNotReady    = "not-ready"
	NodePoolMaintenance = "maintenance"
)

// GPU feature discovery's node labels that MachineGPU's product, family and
// machine select on.
const (
	GPUProductLabel = "nvidia.com/gpu.product"
	GPUFamilyLabel  = "nvidia.com/gpu.family"
	GPUMachineLabel = "nvidia.com/gpu.machine"
)

// DefaultGPUType is the extended resource of a MachineGPU without type.
const DefaultGPUType = "nvidia.com/gpu"

// MachineTypeKey is the key of the node label (and, with taint: true, of the
// taint) whose value names the group that offers machineType on the node.
func MachineTypeKey(machineType string) string {
	return Prefix + machineType
}

// ReservationName is the name of the reservation StatefulSet and Service of a
// machine type: <type>-<group>.
func ReservationName(group, machineType string) string {
	return machineType + "-" + group
}

// NodePoolName is the name of a group's MachineNodePool.
func NodePoolName(group string) string {
	return group + "-node-pool"
}

// HealthValue is the value of a node pool taint for a node's health.
func HealthValue(h v1alpha1.NodeHealth) string {
	switch h {
	case v1alpha1.NodeHealthReady:
		return NodePoolReady
	case v1alpha1.NodeHealthMaintenance:
		return NodePoolMaintenance
	default:
		return NodePoolNotReady
	}
}

// ReservationLabels are the labels of a machine type's reservation
// StatefulSet, Service and pods, and the StatefulSet's selector.
func ReservationLabels(group, machineType string) map[string]string {
	return map[string]string{
		LabelMachineGroup: group,
		LabelMachineType:  machineType,
		LabelPodRole:      PodRoleReservation,
	}
}

// GuestLabels are the labels a guest pod of a machine type carries; container,
// when not empty, names its injecting container.
func GuestLabels(group, machineType, container string) map[string]string {
	l := map[string]string{
		LabelMachineGroup: group,
		LabelMachineType:  machineType,
		LabelPodRole:      PodRoleGuest,
	}
	if container != "" {
		l[LabelInjectingContainer] = container
	}
	return l
}

// FindType returns the machine type name of group, or an error that names the
// types the group has.
func FindType(group *v1alpha1.MachineGroup, name string) (*v1alpha1.MachineType, error) {
	names := make([]string, 0, len(group.Spec.MachineTypes))
	for i := range group.Spec.MachineTypes {
		t := &group.Spec.MachineTypes[i]
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return nil, fmt.Errorf("machine group %s has no machine type %q; its types are %q", group.Name, name, names)
}
