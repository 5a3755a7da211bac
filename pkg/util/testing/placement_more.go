package testing

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// Finalizer adds a finalizer, so that deleting the cluster leaves it terminating.
func (w *ClusterWrapper) Finalizer(name string) *ClusterWrapper {
	w.Finalizers = append(w.Finalizers, name)
	return w
}

// Condition sets a status condition, as the registration agent reports them.
func (w *ClusterWrapper) Condition(condType string, status metav1.ConditionStatus, reason, message string) *ClusterWrapper {
	w.Status.Conditions = append(w.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.Now(),
	})
	return w
}

// Available sets the ManagedClusterConditionAvailable condition to True.
func (w *ClusterWrapper) Available() *ClusterWrapper {
	return w.Condition(clusterv1.ManagedClusterConditionAvailable, metav1.ConditionTrue, "ManagedClusterAvailable", "Managed cluster is available")
}
