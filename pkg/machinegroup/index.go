package machinegroup

import "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"

// PoolNodeIndex indexes MachineGroups by the names of their pool's nodes,
// for informers (a cache.IndexFunc), so that a node's event finds the groups
// that name it. Other objects have no index values.
func PoolNodeIndex(obj any) ([]string, error) {
	g, ok := obj.(*v1alpha1.MachineGroup)
	if !ok {
		return nil, nil
	}
	names := make([]string, 0, len(g.Spec.NodePools))
	for _, e := range g.Spec.NodePools {
		names = append(names, e.Name)
	}
	return names, nil
}
