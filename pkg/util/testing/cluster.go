package testing

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

// ClusterWrapper builds ManagedClusters for tests.
type ClusterWrapper struct{ clusterv1.ManagedCluster }

// MakeCluster returns a ManagedCluster in the default exclusive cluster set "default".
func MakeCluster(name string) *ClusterWrapper {
	return &ClusterWrapper{clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterv1beta2.ClusterSetLabel: "default"}},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
	}}
}

// Obj returns a copy of the built cluster.
func (w *ClusterWrapper) Obj() *clusterv1.ManagedCluster { return w.ManagedCluster.DeepCopy() }

// Clone returns an independent copy of the wrapper.
func (w *ClusterWrapper) Clone() *ClusterWrapper {
	return &ClusterWrapper{*w.ManagedCluster.DeepCopy()}
}

// Label sets a label.
func (w *ClusterWrapper) Label(k, v string) *ClusterWrapper {
	w.Labels[k] = v
	return w
}

// ClusterSet moves the cluster to an exclusive cluster set ("" removes the label).
func (w *ClusterWrapper) ClusterSet(name string) *ClusterWrapper {
	if name == "" {
		delete(w.Labels, clusterv1beta2.ClusterSetLabel)
		return w
	}
	return w.Label(clusterv1beta2.ClusterSetLabel, name)
}

// Claim adds a ClusterClaim to the status.
func (w *ClusterWrapper) Claim(name, value string) *ClusterWrapper {
	w.Status.ClusterClaims = append(w.Status.ClusterClaims, clusterv1.ManagedClusterClaim{Name: name, Value: value})
	return w
}

// Taint adds a taint added at the given time.
func (w *ClusterWrapper) Taint(key, value string, effect clusterv1.TaintEffect, added time.Time) *ClusterWrapper {
	w.Spec.Taints = append(w.Spec.Taints, clusterv1.Taint{Key: key, Value: value, Effect: effect, TimeAdded: metav1.NewTime(added)})
	return w
}

// Resource sets allocatable and capacity of a resource in the status.
func (w *ClusterWrapper) Resource(name clusterv1.ResourceName, allocatable, capacity string) *ClusterWrapper {
	if w.Status.Allocatable == nil {
		w.Status.Allocatable = clusterv1.ResourceList{}
		w.Status.Capacity = clusterv1.ResourceList{}
	}
	w.Status.Allocatable[name] = resource.MustParse(allocatable)
	w.Status.Capacity[name] = resource.MustParse(capacity)
	return w
}

// Terminating marks the cluster as being deleted.
func (w *ClusterWrapper) Terminating() *ClusterWrapper {
	now := metav1.Now()
	w.DeletionTimestamp = &now
	return w
}

// KubeVersion sets status.version.kubernetes.
func (w *ClusterWrapper) KubeVersion(v string) *ClusterWrapper {
	w.Status.Version.Kubernetes = v
	return w
}

// ResourceVersion sets the cluster's resourceVersion.
func (w *ClusterWrapper) ResourceVersion(rv string) *ClusterWrapper {
	w.ManagedCluster.ResourceVersion = rv
	return w
}

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

// MakeExclusiveClusterSet returns a ManagedClusterSet selecting clusters by the set label.
func MakeExclusiveClusterSet(name string) *clusterv1beta2.ManagedClusterSet {
	return &clusterv1beta2.ManagedClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType: clusterv1beta2.ExclusiveClusterSetLabel,
		}},
	}
}

// MakeLabelClusterSet returns a ManagedClusterSet selecting clusters by a label selector.
func MakeLabelClusterSet(name string, selector *metav1.LabelSelector) *clusterv1beta2.ManagedClusterSet {
	return &clusterv1beta2.ManagedClusterSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: clusterv1beta2.ManagedClusterSetSpec{ClusterSelector: clusterv1beta2.ManagedClusterSelector{
			SelectorType:  clusterv1beta2.LabelSelector,
			LabelSelector: selector,
		}},
	}
}

// MakeClusterSetBinding binds a set to a namespace.
func MakeClusterSetBinding(namespace, set string) *clusterv1beta2.ManagedClusterSetBinding {
	return &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: namespace},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set},
	}
}

// MakeScore returns an AddOnPlacementScore in the cluster's namespace.
func MakeScore(cluster, name string, validUntil *time.Time, scores map[string]int32) *clusterv1alpha1.AddOnPlacementScore {
	s := &clusterv1alpha1.AddOnPlacementScore{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster}}
	for k, v := range scores {
		s.Status.Scores = append(s.Status.Scores, clusterv1alpha1.AddOnPlacementScoreItem{Name: k, Value: v})
	}
	if validUntil != nil {
		t := metav1.NewTime(*validUntil)
		s.Status.ValidUntil = &t
	}
	return s
}
