package v1alpha1

import (
	"slices"
	"strings"
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
// the cluster. The cluster's agent creates it and writes only its status;
// fleetfit-hub writes only its spec, which asks the agent for the node labels
// that HPAIntents require.
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
	Spec ClusterInventorySpec `json:"spec,omitempty"`

	// +optional
	Status ClusterInventoryStatus `json:"status,omitempty"`
}

// MaxLabelKeys bounds spec.labelKeys: every key is asked of every agent and
// may split its nodes into more shapes, so the hub asks for at most this many.
const MaxLabelKeys = 128

// ClusterInventorySpec is what the hub asks of the cluster's agent. Only
// fleetfit-hub writes it; the agent reads it.
type ClusterInventorySpec struct {
	// labelKeys are the node label keys that HPAIntents' feature requirements
	// use, sorted. The agent reports node labels with these keys as features,
	// besides those its own prefixes select, and says so in
	// status.reportedLabels. Until it does, the hub takes requirements on a
	// key it does not report as unknown on the cluster, never as met or
	// failed by the label's absence.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=317
	// +kubebuilder:validation:items:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self.isSorted()",message="labelKeys must be sorted"
	LabelKeys []string `json:"labelKeys,omitempty"`
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

	// reportedLabels say which node labels the agent reports as features,
	// so the hub can tell a label a node lacks from one the agent does not
	// report. An inventory without it comes from an agent older than the
	// field; the hub takes it as reporting the default prefixes
	// (feature.node.kubernetes.io/, nvidia.com/gpu., node.kubernetes.io/instance-type,
	// topology.kubernetes.io/, fleetfit.io/).
	// +optional
	ReportedLabels *ReportedLabels `json:"reportedLabels,omitempty"`

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

	// machineGroups are the cluster's MachineGroups with their machine types
	// and usage, sorted by name: at most MaxReportedMachineGroups groups of at
	// most MaxMachineTypes types each, so a report stays well under an
	// object's size limit whatever the cluster holds. A cluster with more
	// groups reports the first by name and counts the rest in
	// omittedMachineGroups.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	MachineGroups []ReportedMachineGroup `json:"machineGroups,omitempty"`

	// omittedMachineGroups counts the groups left out of machineGroups.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedMachineGroups int32 `json:"omittedMachineGroups,omitempty"`

	// unschedulable are the HPAIntents delivered to the cluster some of
	// whose pods kube-scheduler could not place: pods that carry both labels
	// fleetfit.io/hpaintent-namespace and fleetfit.io/hpaintent-name
	// (LabelIntentNamespace, LabelIntentName), have no node, are not being
	// deleted, and whose PodScheduled condition is False with the reason
	// Unschedulable. Machine-type guests count alike: a guest that waits for a
	// machine is such a pod once the scheduler has found no node for it. A
	// pod the scheduler has not yet tried, or holds back for another reason
	// (a scheduling gate), is not counted.
	//
	// One entry per intent, sorted by intentNamespace and intentName. When
	// more than 100 intents (MaxReportedUnschedulable) have unschedulable
	// pods, the entries kept are those whose pods have waited longest (the oldest
	// since, then by intent), and the others are counted in
	// omittedUnschedulable.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Unschedulable []UnschedulableWorkload `json:"unschedulable,omitempty"`

	// omittedUnschedulable counts the intents with unschedulable pods left
	// out of unschedulable.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedUnschedulable int32 `json:"omittedUnschedulable,omitempty"`

	// devices are the cluster's Dynamic Resource Allocation devices: the
	// kinds whose free counts node shapes carry under each kind's name.
	// Absent from agents older than the field.
	// +optional
	Devices *ReportedDevices `json:"devices,omitempty"`

	// nodePools are the cluster's autoscaling pools, sorted by name: at most
	// 16 (MaxReportedNodePools), the others counted in omittedNodePools.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	NodePools []ReportedNodePool `json:"nodePools,omitempty"`

	// omittedNodePools counts the pools left out of nodePools.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedNodePools int32 `json:"omittedNodePools,omitempty"`
}

// Bounds of ClusterInventoryStatus.Unschedulable.
const (
	// MaxReportedUnschedulable bounds the number of its entries.
	MaxReportedUnschedulable = 100
	// MaxUnschedulableMessage bounds the length, in bytes, of each entry's
	// message: kube-scheduler's message lists a reason per kind of node, which
	// this keeps whole on any cluster but a very diverse one.
	MaxUnschedulableMessage = 512
)

// UnschedulableWorkload is what a cluster's agent reports of the pods of
// one HPAIntent that kube-scheduler could not place there.
type UnschedulableWorkload struct {
	// intentNamespace is the namespace of the HPAIntent on the hub: the
	// value of the pods' label fleetfit.io/hpaintent-namespace.
	// +required
	// +kubebuilder:validation:MaxLength=63
	IntentNamespace string `json:"intentNamespace"`
	// intentName is the value of the pods' label fleetfit.io/hpaintent-name:
	// the HPAIntent's name, or for a name longer than a label value may be,
	// its beginning, "_" and a hash of the whole name (see LabelIntentName).
	// +required
	// +kubebuilder:validation:MaxLength=63
	IntentName string `json:"intentName"`
	// podCount is the number of the intent's pods that are unschedulable.
	// +required
	// +kubebuilder:validation:Minimum=1
	PodCount int32 `json:"podCount"`
	// since is when the one of them unschedulable longest became so: the
	// lastTransitionTime of its PodScheduled condition, or the pod's
	// creation when the condition has none.
	// +required
	Since metav1.Time `json:"since"`
	// message is kube-scheduler's message on that pod (such as "0/4 nodes
	// are available: 4 Insufficient nvidia.com/gpu"), cut to 512 bytes
	// (MaxUnschedulableMessage) with a note of how much was left out.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}

// MaxReportedMachineGroups bounds ClusterInventoryStatus.MachineGroups.
const MaxReportedMachineGroups = 16

// ReportedMachineGroup is one MachineGroup as its cluster's agent reports it.
type ReportedMachineGroup struct {
	// name of the MachineGroup.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// ready mirrors the group's Ready condition.
	// +optional
	Ready bool `json:"ready,omitempty"`
	// machineTypes of the group, in the order of its spec, with their usage.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	MachineTypes []ReportedMachineType `json:"machineTypes,omitempty"`
}

// ReportedMachineType is one machine type of a group and its usage. Free
// machines, those a new guest can take at once, are usage.reserved: running
// reservation pods.
type ReportedMachineType struct {
	// name of the machine type.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// spec of one machine.
	// +required
	Spec MachineTypeSpec `json:"spec"`
	// usage of the type.
	// +optional
	Usage MachineUsage `json:"usage"`
}

// ReportedLabels say which node labels an agent reports: a label is
// reported when its key starts with one of prefixes or equals one of keys.
type ReportedLabels struct {
	// prefixes of the keys of the labels reported.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=317
	Prefixes []string `json:"prefixes,omitempty"`
	// keys of the labels reported besides those prefixes select: the
	// spec.labelKeys the agent has taken into account, sorted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=317
	Keys []string `json:"keys,omitempty"`
}

// Reports says whether a node label with key is reported; a nil r reports
// nothing (see ClusterInventoryStatus.ReportedLabels for what the hub assumes
// of an inventory without it).
func (r *ReportedLabels) Reports(key string) bool {
	if r == nil {
		return false
	}
	for _, p := range r.Prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	// Keys are short and sorted by the agent, but an inventory is input:
	// a plain search holds whatever their order.
	return slices.Contains(r.Keys, key)
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
