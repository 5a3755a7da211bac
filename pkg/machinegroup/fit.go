package machinegroup

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// PoolNodes are the names of the group's pool nodes of machine type name, in
// spec order.
func PoolNodes(group *v1alpha1.MachineGroup, name string) []string {
	var nodes []string
	for _, p := range group.Spec.NodePools {
		if len(p.MachineType) > 0 && p.MachineType[0].Name == name {
			nodes = append(nodes, p.Name)
		}
	}
	return nodes
}

// Shortfall is a resource that a node has less of than one machine needs.
type Shortfall struct {
	Resource corev1.ResourceName
	// Need is what one machine needs, Has what the node has allocatable.
	Need, Has resource.Quantity
}

// ResourceOrder is the order in which resources are checked and reported:
// cpu, memory, then the GPU resource.
func ResourceOrder(t *v1alpha1.MachineType) []corev1.ResourceName {
	order := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}
	if g := t.Spec.GPU; g != nil && g.Num > 0 {
		order = append(order, GPUResource(g))
	}
	return order
}

// Shortfalls are the resources, in ResourceOrder, of which allocatable holds
// less than one machine of type t needs; none when a machine fits.
func Shortfalls(t *v1alpha1.MachineType, allocatable corev1.ResourceList) []Shortfall {
	need := Resources(t)
	var short []Shortfall
	for _, r := range ResourceOrder(t) {
		n := need[r]
		has := allocatable[r]
		if has.Cmp(n) < 0 {
			short = append(short, Shortfall{Resource: r, Need: n, Has: has})
		}
	}
	return short
}
