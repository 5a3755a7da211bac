// Package v1alpha1 holds fleetfit's own API, group fleetfit.io, version v1alpha1:
//
//   - HPAIntent: the hardware requirements (resources and node features) that
//     the decisions of one OCM Placement must honour, and optionally the
//     workload to deliver to the chosen clusters.
//   - ClusterInventory: what one managed cluster really has free, per resource
//     and per node shape, as reported by that cluster's fleetfit agent.
//
// +kubebuilder:object:generate=true
// +groupName=fleetfit.io
package v1alpha1
