package machinegroup

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Resources are what one machine of type t has: a reservation pod's and an
// injected guest container's requests, and their limits (requests = limits).
func Resources(t *v1alpha1.MachineType) corev1.ResourceList {
	l := corev1.ResourceList{
		corev1.ResourceCPU:    t.Spec.CPU.DeepCopy(),
		corev1.ResourceMemory: t.Spec.Memory.DeepCopy(),
	}
	if g := t.Spec.GPU; g != nil && g.Num > 0 {
		l[GPUResource(g)] = *resource.NewQuantity(int64(g.Num), resource.DecimalSI)
	}
	return l
}

// GPUResource is the extended resource a MachineGPU is.
func GPUResource(g *v1alpha1.MachineGPU) corev1.ResourceName {
	if g.Type == "" {
		return DefaultGPUType
	}
	return corev1.ResourceName(g.Type)
}

// GPUSelector is the node label requirement of a MachineGPU's product, family
// or machine; ok is false when it selects none.
func GPUSelector(g *v1alpha1.MachineGPU) (r corev1.NodeSelectorRequirement, ok bool) {
	if g == nil {
		return r, false
	}
	switch {
	case g.Product != "":
		return in(GPUProductLabel, g.Product), true
	case g.Family != "":
		return in(GPUFamilyLabel, g.Family), true
	case g.Machine != "":
		return in(GPUMachineLabel, g.Machine), true
	}
	return r, false
}

// NodeRequirements are the node affinity requirements of a pod of type t in
// group: a node of the type in the group, in a ready pool, with the type's
// GPU model when it names one.
func NodeRequirements(group string, t *v1alpha1.MachineType) []corev1.NodeSelectorRequirement {
	reqs := []corev1.NodeSelectorRequirement{
		in(MachineTypeKey(t.Name), group),
		in(LabelNodePool, NodePoolReady),
	}
	if r, ok := GPUSelector(t.Spec.GPU); ok {
		reqs = append(reqs, r)
	}
	return reqs
}

// Tolerations are what a pod of type t in group tolerates: the taints that a
// pool node with taint: true carries while ready.
func Tolerations(group string, t *v1alpha1.MachineType) []corev1.Toleration {
	return []corev1.Toleration{
		{Key: MachineTypeKey(t.Name), Operator: corev1.TolerationOpEqual, Value: group, Effect: corev1.TaintEffectNoSchedule},
		{Key: LabelNodePool, Operator: corev1.TolerationOpEqual, Value: NodePoolReady, Effect: corev1.TaintEffectNoSchedule},
	}
}

// NodeTaints are the taints a pool node of type machineType in group carries
// with taint: true, for its health.
func NodeTaints(group, machineType string, h v1alpha1.NodeHealth) []corev1.Taint {
	return []corev1.Taint{
		{Key: MachineTypeKey(machineType), Value: group, Effect: corev1.TaintEffectNoSchedule},
		{Key: LabelNodePool, Value: HealthValue(h), Effect: corev1.TaintEffectNoSchedule},
	}
}

func in(key, value string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}
}
