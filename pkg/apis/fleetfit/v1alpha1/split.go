package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SplitPolicy says how an intent's replicas are divided among the decided
// clusters.
// +kubebuilder:validation:Enum=Capacity;Even;Weights
type SplitPolicy string

const (
	// SplitByCapacity fills the clusters in score order, each up to how many
	// replicas its nodes really hold (per-node fit, after in-flight
	// reservations), with as few clusters as hold the total: Karmada's
	// Divided scheduling with weights from available replicas, counted node
	// by node.
	SplitByCapacity SplitPolicy = "Capacity"
	// SplitEvenly gives every decided cluster the same share (the first ones
	// in score order one more when the total does not divide), each capped at
	// what the cluster holds.
	SplitEvenly SplitPolicy = "Even"
	// SplitByWeights gives each decided cluster a share in proportion to the
	// weight of the first entry of weights whose selector matches it; a
	// cluster no entry matches is not chosen.
	SplitByWeights SplitPolicy = "Weights"
)

// DefaultSplitMinReplicas is the smallest share a cluster gets when
// minReplicas is left out.
const DefaultSplitMinReplicas = 1

// ReplicaSplit asks that the replicas of the intent's workload be divided
// among its Placement's decided clusters instead of run in full on each.
//
// +kubebuilder:validation:XValidation:rule="!has(self.weights) || size(self.weights) == 0 || (has(self.by) && self.by == 'Weights')",message="weights are read only when by is Weights: set by: Weights, or remove weights"
// +kubebuilder:validation:XValidation:rule="!has(self.by) || self.by != 'Weights' || (has(self.weights) && size(self.weights) > 0)",message="by: Weights needs weights: give at least one cluster selector with its weight"
type ReplicaSplit struct {
	// by is how the replicas are divided: Capacity (the default), Even or
	// Weights.
	// +optional
	By SplitPolicy `json:"by,omitempty"`

	// weights are the static weights of by: Weights, each for the clusters
	// its selector matches (a cluster takes the first entry that matches).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Weights []ClusterWeight `json:"weights,omitempty"`

	// minReplicas is the smallest share a decided cluster gets: a cluster
	// that cannot hold that many replicas is not chosen. 1 when left out.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// allOrNothing places the workload only when the decided clusters hold
	// every replica at once. Left false, the hub places what fits and the
	// rest as room appears, and the intent's status says how many wait.
	// +optional
	AllOrNothing bool `json:"allOrNothing,omitempty"`
}

// ClusterWeight is the weight of the clusters a label selector matches.
type ClusterWeight struct {
	// clusterSelector selects ManagedClusters by their labels; an empty
	// selector matches every cluster.
	// +required
	ClusterSelector metav1.LabelSelector `json:"clusterSelector"`
	// weight of those clusters' shares; 0 keeps them out.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Weight int32 `json:"weight"`
}

// SplitStatus is how the intent's replicas are divided now.
type SplitStatus struct {
	// replicas is the total the shares divide.
	Replicas int32 `json:"replicas"`
	// shares are the decided clusters' shares, by cluster name.
	// +optional
	// +listType=map
	// +listMapKey=clusterName
	// +kubebuilder:validation:MaxItems=1000
	Shares []ClusterShare `json:"shares,omitempty"`
	// unplaced is how many replicas no decided cluster has room for yet.
	// +optional
	Unplaced int32 `json:"unplaced,omitempty"`
}

// ClusterShare is the replicas one cluster runs.
type ClusterShare struct {
	// clusterName is the managed cluster.
	// +kubebuilder:validation:MaxLength=253
	ClusterName string `json:"clusterName"`
	// replicas the cluster runs: the delivered workload's replicas there.
	Replicas int32 `json:"replicas"`
}

// MinShare is the smallest share a cluster gets.
func (s *ReplicaSplit) MinShare() int32 {
	if s == nil || s.MinReplicas == nil || *s.MinReplicas < 1 {
		return DefaultSplitMinReplicas
	}
	return *s.MinReplicas
}

// Policy is by, with its default.
func (s *ReplicaSplit) Policy() SplitPolicy {
	if s == nil || s.By == "" {
		return SplitByCapacity
	}
	return s.By
}

// ShareOf returns the share of the cluster, and whether it has one.
func (s *SplitStatus) ShareOf(cluster string) (int32, bool) {
	if s == nil {
		return 0, false
	}
	for _, sh := range s.Shares {
		if sh.ClusterName == cluster {
			return sh.Replicas, true
		}
	}
	return 0, false
}
