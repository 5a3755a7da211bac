package nodepool

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Rules are the RBAC rules the controller needs on the managed cluster:
//   - Nodes: watched, labels and annotations applied (patch), taints written
//     (update), and read again on a conflict (get).
//   - MachineGroups: watched; setting finalizers on them is what
//     OwnerReferencesPermissionEnforcement asks of whoever sets a controller
//     reference with blockOwnerDeletion to a group.
//   - MachineNodePools: watched, created and updated, and their status
//     updated; delete, because with OwnerReferencesPermissionEnforcement
//     changing an object's owner references takes it (a pool that a deleted
//     group of the same name left is taken over).
func Rules() []rbacv1.PolicyRule {
	group := v1alpha1.SchemeGroupVersion.Group
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
		{APIGroups: []string{group}, Resources: []string{"machinegroups"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{group}, Resources: []string{"machinegroups/finalizers"}, Verbs: []string{"update"}},
		{APIGroups: []string{group}, Resources: []string{"machinenodepools"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{group}, Resources: []string{"machinenodepools/status"}, Verbs: []string{"update"}},
	}
}
