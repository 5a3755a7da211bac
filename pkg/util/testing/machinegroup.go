package testing

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// MachineGroupWrapper builds a spoke's MachineGroup.
type MachineGroupWrapper struct{ v1alpha1.MachineGroup }

// MakeMachineGroup starts a MachineGroup (cluster-scoped) with a name, no
// machine types and no node pool: it is invalid until it has a type.
func MakeMachineGroup(name string) *MachineGroupWrapper {
	return &MachineGroupWrapper{v1alpha1.MachineGroup{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Obj returns a copy of the group built so far.
func (w *MachineGroupWrapper) Obj() *v1alpha1.MachineGroup { return w.DeepCopy() }

// Clone returns an independent builder holding a copy of the group.
func (w *MachineGroupWrapper) Clone() *MachineGroupWrapper {
	return &MachineGroupWrapper{*w.DeepCopy()}
}

// Label sets a label.
func (w *MachineGroupWrapper) Label(k, v string) *MachineGroupWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// UID sets the group's UID, which the objects the agent creates for it name
// as their owner.
func (w *MachineGroupWrapper) UID(uid types.UID) *MachineGroupWrapper {
	w.MachineGroup.UID = uid
	return w
}

// Generation sets metadata.generation.
func (w *MachineGroupWrapper) Generation(n int64) *MachineGroupWrapper {
	w.MachineGroup.Generation = n
	return w
}

// Created sets the creation timestamp, which decides which group owns a node
// two groups name.
func (w *MachineGroupWrapper) Created(t time.Time) *MachineGroupWrapper {
	w.CreationTimestamp = metav1.NewTime(t)
	return w
}

// Deleting marks the group as being deleted since t.
func (w *MachineGroupWrapper) Deleting(t time.Time) *MachineGroupWrapper {
	w.DeletionTimestamp = &metav1.Time{Time: t}
	return w
}

// MachineType appends machine types, typically MakeGroupMachineType(...).Obj().
func (w *MachineGroupWrapper) MachineType(machineTypes ...v1alpha1.MachineType) *MachineGroupWrapper {
	for i := range machineTypes {
		w.Spec.MachineTypes = append(w.Spec.MachineTypes, *machineTypes[i].DeepCopy())
	}
	return w
}

// Node appends a node pool entry offering one machine type.
func (w *MachineGroupWrapper) Node(name, machineType string, mode v1alpha1.NodePoolMode, taint bool) *MachineGroupWrapper {
	return w.NodePool(v1alpha1.NodePoolEntry{
		Name: name, Mode: mode, Taint: taint, MachineType: []v1alpha1.MachineTypeRef{{Name: machineType}},
	})
}

// NodePool appends node pool entries built elsewhere, for tests that also
// use the entries on their own.
func (w *MachineGroupWrapper) NodePool(entries ...v1alpha1.NodePoolEntry) *MachineGroupWrapper {
	for i := range entries {
		w.Spec.NodePools = append(w.Spec.NodePools, *entries[i].DeepCopy())
	}
	return w
}

// Condition appends a status condition without a transition time; callers
// that send it to an API server set one with ConditionAt.
func (w *MachineGroupWrapper) Condition(condType string, status metav1.ConditionStatus, reason, message string) *MachineGroupWrapper {
	return w.ConditionAt(condType, status, reason, message, metav1.Time{})
}

// ConditionAt appends a status condition that last changed at t, as an API
// server requires of a condition.
func (w *MachineGroupWrapper) ConditionAt(condType string, status metav1.ConditionStatus, reason, message string, t metav1.Time) *MachineGroupWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, LastTransitionTime: t,
	})
	return w
}

// Usage appends the usage of a machine type to the status, as the agent's
// machine controller counts it.
func (w *MachineGroupWrapper) Usage(machineType string, usage v1alpha1.MachineUsage) *MachineGroupWrapper {
	w.Status.AvailableMachines = append(w.Status.AvailableMachines, v1alpha1.AvailableMachine{Name: machineType, Usage: usage})
	return w
}

// GroupMachineTypeWrapper builds a machine type as a MachineGroup offers it.
type GroupMachineTypeWrapper struct{ v1alpha1.MachineType }

// MakeGroupMachineType starts a machine type of cpu and memory, without a
// GPU, of which the group offers none yet; it panics on a string that is not
// a quantity, as tests only use literals.
func MakeGroupMachineType(name, cpu, memory string) *GroupMachineTypeWrapper {
	return &GroupMachineTypeWrapper{v1alpha1.MachineType{
		Name: name,
		Spec: v1alpha1.MachineTypeSpec{CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory)},
	}}
}

// Obj returns a copy of the machine type built so far.
func (w *GroupMachineTypeWrapper) Obj() v1alpha1.MachineType { return *w.DeepCopy() }

// Available sets how many machines of the type the group offers.
func (w *GroupMachineTypeWrapper) Available(n int32) *GroupMachineTypeWrapper {
	w.MachineType.Available = n
	return w
}

// GPU sets the GPUs of one machine.
func (w *GroupMachineTypeWrapper) GPU(gpu v1alpha1.MachineGPU) *GroupMachineTypeWrapper {
	w.Spec.GPU = &gpu
	return w
}

// MachineNodePoolWrapper builds the MachineNodePool the agent keeps for a
// MachineGroup.
type MachineNodePoolWrapper struct{ v1alpha1.MachineNodePool }

// MakeMachineNodePool starts a MachineNodePool of the named group, with an
// empty pool and no status.
func MakeMachineNodePool(name, group string) *MachineNodePoolWrapper {
	return &MachineNodePoolWrapper{v1alpha1.MachineNodePool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1alpha1.MachineNodePoolSpec{MachineGroup: group},
	}}
}

// Obj returns a copy of the pool built so far.
func (w *MachineNodePoolWrapper) Obj() *v1alpha1.MachineNodePool { return w.DeepCopy() }

// Clone returns an independent builder holding a copy of the pool.
func (w *MachineNodePoolWrapper) Clone() *MachineNodePoolWrapper {
	return &MachineNodePoolWrapper{*w.DeepCopy()}
}

// Label sets a label.
func (w *MachineNodePoolWrapper) Label(k, v string) *MachineNodePoolWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// Condition appends a status condition without a transition time, like
// MachineGroupWrapper.Condition.
func (w *MachineNodePoolWrapper) Condition(condType string, status metav1.ConditionStatus, reason, message string) *MachineNodePoolWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message,
	})
	return w
}
