package testing

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// UID sets the placement's UID.
func (w *PlacementWrapper) UID(uid string) *PlacementWrapper {
	w.Placement.UID = types.UID(uid)
	return w
}

// Generation sets the placement's generation.
func (w *PlacementWrapper) Generation(g int64) *PlacementWrapper {
	w.Placement.Generation = g
	return w
}

// PredicateClaims adds a predicate with a claim selector made of the given requirements.
func (w *PlacementWrapper) PredicateClaims(reqs ...metav1.LabelSelectorRequirement) *PlacementWrapper {
	return w.Predicate(clusterv1beta1.ClusterSelector{ClaimSelector: clusterv1beta1.ClusterClaimSelector{MatchExpressions: reqs}})
}

// MakeToleration returns a toleration; seconds, when given, sets tolerationSeconds.
func MakeToleration(key string, op clusterv1beta1.TolerationOperator, value string, effect clusterv1.TaintEffect, seconds ...int64) clusterv1beta1.Toleration {
	t := clusterv1beta1.Toleration{Key: key, Operator: op, Value: value, Effect: effect}
	if len(seconds) > 0 {
		s := seconds[0]
		t.TolerationSeconds = &s
	}
	return t
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
