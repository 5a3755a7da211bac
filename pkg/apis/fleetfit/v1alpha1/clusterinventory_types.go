package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultInventoryStaleAfter is how old a ClusterInventory may be, by default,
// and still make its cluster eligible for new decisions on the hub (the hub's
// --inventory-stale-after). Agents report well within it, even when nothing
// changes. A stale inventory never takes a decided cluster away.
const DefaultInventoryStaleAfter = 10 * time.Minute

// ClusterInventory is what one managed cluster really has free, as its
// fleetfit agent last saw it. It lives on the hub in the namespace named after
// the cluster, and only that cluster's agent writes it.
//
// Its size depends on how many distinct node shapes the cluster has, not on
// how many nodes: nodes that look alike (same readiness, taints, feature
// labels and allocatable) share one shape with a bounded summary of their free
// resources that never claims more than some real node has.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=cinv,categories=fleetfit
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodeCount`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyNodeCount`,priority=1
// +kubebuilder:printcolumn:name="Free CPU",type=string,JSONPath=`.status.resources[?(@.name=="cpu")].free`
// +kubebuilder:printcolumn:name="Free Memory",type=string,JSONPath=`.status.resources[?(@.name=="memory")].free`
// +kubebuilder:printcolumn:name="GPUs",type=string,JSONPath=`.status.resources[?(@.name=="nvidia.com/gpu")].free`
// +kubebuilder:printcolumn:name="Shapes",type=integer,JSONPath=`.status.shapeCount`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterInventory struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Status ClusterInventoryStatus `json:"status,omitempty"`
}

// ClusterInventoryStatus is the report of one cluster's agent.
type ClusterInventoryStatus struct {
	// agentVersion is the version of the agent that wrote the report.
	// +optional
	AgentVersion string `json:"agentVersion,omitempty"`

	// revision increases with every report that changed the content.
	// +optional
	// +kubebuilder:validation:Minimum=0
	Revision int64 `json:"revision,omitempty"`

	// observedAt is when the agent computed the report.
	// +optional
	ObservedAt metav1.Time `json:"observedAt,omitempty"`

	// nodeCount is the number of nodes in the cluster.
	// +optional
	NodeCount int32 `json:"nodeCount,omitempty"`

	// readyNodeCount is the number of nodes that are Ready and schedulable.
	// +optional
	ReadyNodeCount int32 `json:"readyNodeCount,omitempty"`

	// shapeCount is the number of entries in nodeShapes.
	// +optional
	ShapeCount int32 `json:"shapeCount,omitempty"`

	// resources are the cluster's totals per resource, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	Resources []ResourceTotals `json:"resources,omitempty"`

	// nodeShapes group the nodes that look alike, sorted by name.
	// +optional
	// +listType=map
	// +listMapKey=name
	NodeShapes []NodeShape `json:"nodeShapes,omitempty"`
}

// ResourceTotals are a cluster's totals for one resource.
type ResourceTotals struct {
	// name of the resource.
	// +required
	Name corev1.ResourceName `json:"name"`
	// capacity is the sum of the nodes' capacity.
	// +optional
	Capacity resource.Quantity `json:"capacity,omitempty"`
	// allocatable is the sum of the nodes' allocatable.
	// +optional
	Allocatable resource.Quantity `json:"allocatable,omitempty"`
	// requested is the sum of the requests of the pods bound to nodes that
	// have not terminated, counted as kube-scheduler counts them.
	// +optional
	Requested resource.Quantity `json:"requested,omitempty"`
	// free is allocatable minus requested, summed over schedulable nodes.
	// +optional
	Free resource.Quantity `json:"free,omitempty"`
}

// NodeShape is a group of nodes that share readiness, taints, reported
// feature labels and allocatable resources.
type NodeShape struct {
	// name identifies the shape; it is derived from what the nodes share, so
	// it stays the same from one report to the next.
	// +required
	Name string `json:"name"`

	// nodeCount is the number of nodes of this shape.
	// +required
	NodeCount int32 `json:"nodeCount"`

	// schedulable is true when the nodes are Ready and not cordoned.
	// +optional
	Schedulable bool `json:"schedulable,omitempty"`

	// labels are the nodes' feature labels (those with a reported prefix).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// taints of the nodes.
	// +optional
	// +listType=atomic
	Taints []corev1.Taint `json:"taints,omitempty"`

	// allocatable of each node of the shape.
	// +optional
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`

	// free summarises what is free on the nodes: distinct free vectors with
	// how many nodes have at least that much. Every vector is rounded down,
	// so no entry claims more than a real node has.
	// +optional
	// +listType=atomic
	Free []FreeVector `json:"free,omitempty"`

	// truncated is true when nodes were merged into coarser vectors to bound
	// the summary's size; replica counts are then lower bounds.
	// +optional
	Truncated bool `json:"truncated,omitempty"`
}

// FreeVector is an amount of free resources that count nodes each have.
type FreeVector struct {
	// count is the number of nodes that have at least resources free.
	// +required
	// +kubebuilder:validation:Minimum=1
	Count int32 `json:"count"`
	// resources free on each of those nodes.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// ClusterInventoryList is a list of ClusterInventories.
//
// +kubebuilder:object:root=true
type ClusterInventoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterInventory `json:"items"`
}
