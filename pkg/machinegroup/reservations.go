package machinegroup

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// PodState is how a guest or reservation pod counts in its machine type's
// usage, following the pod states of Imperator's design.
type PodState int

const (
	// PodOther is neither of the states below: a pod that has finished, or a
	// pending pod the scheduler has not yet looked at. It counts nowhere.
	PodOther PodState = iota
	// PodRunning is a pod bound to a node and running or creating its
	// containers (Running and ContainerCreating in Imperator's design): a machine in use
	// (a guest) or held (a reservation).
	PodRunning
	// PodUnscheduled is a pod that the scheduler could not place yet: a guest
	// waiting for a machine, or a reservation that holds nothing.
	PodUnscheduled
	// PodDeleting is a pod being deleted; it counts as neither, so its
	// replacement is not held back.
	PodDeleting
)

// StateOf classifies a pod. A bound pod that is Pending (pulling images,
// creating containers) is ContainerCreating, so it runs; a pod without a node
// that is Pending counts as unscheduled whether or not the scheduler has
// already said so, so that a new guest is waiting from the moment it exists.
func StateOf(p *corev1.Pod) PodState {
	switch {
	case p.DeletionTimestamp != nil:
		return PodDeleting
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return PodOther
	case p.Spec.NodeName != "":
		return PodRunning
	case p.Status.Phase == corev1.PodPending || p.Status.Phase == "":
		return PodUnscheduled
	}
	return PodOther
}

// Usage counts the pods of one machine type into its usage; maximum is the
// type's available count.
func Usage(maximum int32, guests, reservations []*corev1.Pod) v1alpha1.MachineUsage {
	u := v1alpha1.MachineUsage{Maximum: maximum}
	for _, p := range guests {
		switch StateOf(p) {
		case PodRunning:
			u.Used++
		case PodUnscheduled:
			u.Waiting++
		}
	}
	for _, p := range reservations {
		if StateOf(p) == PodRunning {
			u.Reserved++
		}
	}
	return u
}

// ReservationReplicas is how many reservation pods a machine type keeps:
// its maximum less the guests that use or wait for a machine, never below
// zero. A new guest therefore takes over a reservation: the reservation
// StatefulSet shrinks and the guest schedules onto the node it frees.
func ReservationReplicas(u v1alpha1.MachineUsage) int32 {
	return max(0, u.Maximum-(u.Used+u.Waiting))
}
