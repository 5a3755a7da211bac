package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MachineGroup carves named machine types — a bundle of CPU, memory and GPUs
// such as "compute-xlarge = 40 cores, 128Gi, 2 × RTX-3090" — out of a pool of
// a managed cluster's nodes, and keeps `available` machines of each type
// reserved for guest pods that only say which type they want. It lives on the
// managed cluster; fleetfit-agent's machine-group controllers act on it.
//
// A node belongs to at most one group. Its name is used in labels and in the
// names of the reservation StatefulSets (`<type>-<group>`), so it is a DNS
// label and `<type>-<group>` fits in 52 characters (a StatefulSet's pods carry
// its name and a 10-character revision hash in a label).
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mg,categories=fleetfit
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Types",type=string,JSONPath=`.spec.machineTypes[*].name`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodeCount`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 50",message="metadata.name must be a DNS label of at most 50 characters (lower case letters, digits and '-'): it is a label value and part of the reservation StatefulSets' names"
// +kubebuilder:validation:XValidation:rule="self.spec.machineTypes.all(t, size(t.name) + size(self.metadata.name) <= 51)",message="the reservation StatefulSet of each machine type is named <type>-<group>, at most 52 characters so that its pods can be labelled with their revision: shorten the longest machine type names or the group name"
type MachineGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MachineGroupSpec `json:"spec"`
	// +optional
	Status MachineGroupStatus `json:"status,omitempty"`
}

// MaxMachineTypes bounds a group's machine types, and MaxNodePoolEntries its
// node pool, so that admission's checks have a bounded cost and a group's
// report to the hub a bounded size.
const (
	MaxMachineTypes    = 32
	MaxNodePoolEntries = 1000
)

// MachineGroupSpec is what the cluster admin offers.
//
// +kubebuilder:validation:XValidation:rule="!has(self.nodePools) || self.nodePools.all(p, p.machineType.all(m, self.machineTypes.exists(t, t.name == m.name)))",messageExpression="'machine type ' + self.nodePools.map(p, p.machineType[0].name).filter(n, !self.machineTypes.exists(t, t.name == n))[0] + ' of a node pool entry is not defined in machineTypes; define it there or fix the entry'",fieldPath=".nodePools"
type MachineGroupSpec struct {
	// nodePools are the nodes of the group, one entry per node.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	NodePools []NodePoolEntry `json:"nodePools,omitempty"`

	// machineTypes are the machine types the group offers.
	// +required
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	MachineTypes []MachineType `json:"machineTypes"`
}

// NodePoolMode says whether a pool node takes reservations.
// +kubebuilder:validation:Enum=ready;maintenance
type NodePoolMode string

const (
	// NodePoolModeReady lets reservation and guest pods onto the node while it is healthy.
	NodePoolModeReady NodePoolMode = "ready"
	// NodePoolModeMaintenance keeps new reservation and guest pods off the node.
	NodePoolModeMaintenance NodePoolMode = "maintenance"
)

// NodePoolEntry is one node of a group.
type NodePoolEntry struct {
	// name of the Node.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// mode of the node: ready to take reservations, or in maintenance.
	// +optional
	// +kubebuilder:default=ready
	Mode NodePoolMode `json:"mode,omitempty"`

	// taint, when true, taints the node so that only pods of its machine
	// type (which tolerate the taints) schedule there.
	// +optional
	// +kubebuilder:default=false
	Taint bool `json:"taint,omitempty"`

	// machineType is the node's machine type, a list of exactly one.
	// +required
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1
	MachineType []MachineTypeRef `json:"machineType"`
}

// MachineTypeRef names a machine type of the group.
type MachineTypeRef struct {
	// name of the machine type.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	Name string `json:"name"`
}

// The bounds of a machine type's cpu and memory are rules of MachineType, not
// of MachineTypeSpec, which agents also report to the hub in
// ClusterInventories: a type stored before the rules must not make a
// cluster's whole report unwritable. They leave negative amounts and long
// exponents to MachineTypeSpec's rules, which say more about those. The bound
// is MaxAmount, as for an HPAIntent's amounts.

// MachineType is a named bundle of resources and how many of it the group
// keeps reserved. Its cpu and memory become the requests and limits of its
// pods, so each must be more than 0 (a limit of 0 is no limit at all) and at
// most 9223372036854775, the most fleetfit can count (in thousandths, in 64
// bits).
//
// +kubebuilder:validation:XValidation:rule="string(self.spec.cpu).startsWith('-') || string(self.spec.cpu).matches('[eE][-+]?[0-9]{4}') || !isQuantity(string(self.spec.cpu)) || (quantity(string(self.spec.cpu)).compareTo(quantity('0')) > 0 && quantity(string(self.spec.cpu)).compareTo(quantity('9223372036854775')) <= 0)",message="cpu must be more than 0 and at most 9223372036854775 cores, the most fleetfit can count: it is the requests and limits of each machine's pods, and a limit of 0 is no limit at all",fieldPath=".spec.cpu"
// +kubebuilder:validation:XValidation:rule="string(self.spec.memory).startsWith('-') || string(self.spec.memory).matches('[eE][-+]?[0-9]{4}') || !isQuantity(string(self.spec.memory)) || (quantity(string(self.spec.memory)).compareTo(quantity('0')) > 0 && quantity(string(self.spec.memory)).compareTo(quantity('9223372036854775')) <= 0)",message="memory must be more than 0 and at most 9223372036854775 bytes (about 8 PiB), the most fleetfit can count: it is the requests and limits of each machine's pods, and a limit of 0 is no limit at all",fieldPath=".spec.memory"
type MachineType struct {
	// name of the machine type: a DNS label, as it is a node label's key name
	// (machines.fleetfit.io/<name>) and part of object names.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// spec is what one machine of this type has.
	// +required
	Spec MachineTypeSpec `json:"spec"`

	// available is how many machines of this type the group keeps: reserved
	// by reservation pods or used by guests.
	// +required
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Available int32 `json:"available"`
}

// MachineTypeSpec is one machine's resources. They become the requests and
// limits of a reservation pod and of the guest's injected container.
//
// +kubebuilder:validation:XValidation:rule="!string(self.cpu).startsWith('-') && !string(self.memory).startsWith('-')",message="cpu and memory must not be negative"
// +kubebuilder:validation:XValidation:rule="!string(self.cpu).matches('[eE][-+]?[0-9]{4}') && !string(self.memory).matches('[eE][-+]?[0-9]{4}')",message="write cpu and memory with an exponent of at most three digits, such as 4e9 or 4G"
type MachineTypeSpec struct {
	// cpu of one machine, e.g. 40 or 40000m.
	// +required
	CPU resource.Quantity `json:"cpu"`
	// memory of one machine, e.g. 128Gi.
	// +required
	Memory resource.Quantity `json:"memory"`
	// gpu of one machine, if any.
	// +optional
	GPU *MachineGPU `json:"gpu,omitempty"`
}

// MachineGPU is a machine's GPUs: how many of which extended resource, and
// optionally which model, selected by GPU feature discovery's node labels.
//
// +kubebuilder:validation:XValidation:rule="[has(self.product), has(self.family), has(self.machine)].filter(x, x).size() <= 1",message="select GPUs by at most one of product, family or machine"
type MachineGPU struct {
	// type is the extended resource the GPUs are, nvidia.com/gpu by default.
	// +optional
	// +kubebuilder:default="nvidia.com/gpu"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="!self.split('/')[0].endsWith('kubernetes.io')",message="type must be an extended resource (a domain outside kubernetes.io, e.g. nvidia.com/gpu)"
	Type string `json:"type,omitempty"`
	// num is how many GPUs one machine has.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	Num int32 `json:"num"`
	// product selects nodes whose nvidia.com/gpu.product label has this value,
	// e.g. NVIDIA-GeForce-RTX-3090.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Product string `json:"product,omitempty"`
	// family selects nodes whose nvidia.com/gpu.family label has this value, e.g. ampere.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Family string `json:"family,omitempty"`
	// machine selects nodes whose nvidia.com/gpu.machine label has this value, e.g. DGX-1.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Machine string `json:"machine,omitempty"`
}

// MachineGroupStatus is what the machine controller observed.
type MachineGroupStatus struct {
	// observedGeneration is the generation the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready says whether every node and machine type of the
	// group is set up; its message says what is wrong otherwise.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// nodeCount is the number of nodes in the group's pool.
	// +optional
	NodeCount int32 `json:"nodeCount,omitempty"`

	// availableMachines is the usage of each machine type, in the order of spec.machineTypes.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	AvailableMachines []AvailableMachine `json:"availableMachines,omitempty"`
}

// AvailableMachine is the usage of one machine type.
type AvailableMachine struct {
	// name of the machine type.
	// +required
	Name string `json:"name"`
	// usage of the machine type.
	// +required
	Usage MachineUsage `json:"usage"`
}

// MachineUsage counts a machine type's machines.
type MachineUsage struct {
	// maximum is the type's available count.
	// +optional
	Maximum int32 `json:"maximum"`
	// reserved is the number of reservation pods running or being created:
	// machines held for guests to come.
	// +optional
	Reserved int32 `json:"reserved"`
	// used is the number of guest pods running or being created.
	// +optional
	Used int32 `json:"used"`
	// waiting is the number of guest pods not yet scheduled onto a node.
	// +optional
	Waiting int32 `json:"waiting"`
}

// +kubebuilder:object:root=true

// MachineGroupList is a list of MachineGroups.
type MachineGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineGroup `json:"items"`
}

// MachineNodePool is the node pool of one MachineGroup, named
// `<group>-node-pool` and owned by it: the node pool controller copies the
// group's pool into it, keeps the pool's nodes labelled, annotated and
// tainted, and reports their health, which the machine controller reads.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=mnp,categories=fleetfit
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.spec.machineGroup`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineNodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MachineNodePoolSpec `json:"spec"`
	// +optional
	Status MachineNodePoolStatus `json:"status,omitempty"`
}

// MachineNodePoolSpec is a copy of a group's pool.
type MachineNodePoolSpec struct {
	// machineGroup is the name of the owning MachineGroup.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	MachineGroup string `json:"machineGroup"`

	// nodePool is the group's spec.nodePools.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	NodePool []NodePoolEntry `json:"nodePool,omitempty"`

	// machineTypeStock names the group's machine types.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	MachineTypeStock []MachineTypeRef `json:"machineTypeStock,omitempty"`
}

// NodeHealth is a pool node's condition.
// +kubebuilder:validation:Enum=Ready;NotReady;Maintenance
type NodeHealth string

const (
	// NodeHealthReady: the pool is in ready mode and the node has none of the not-ready taints.
	NodeHealthReady NodeHealth = "Ready"
	// NodeHealthNotReady: the node has a not-ready, unschedulable,
	// network-unavailable or unreachable taint, or does not exist.
	NodeHealthNotReady NodeHealth = "NotReady"
	// NodeHealthMaintenance: the pool entry is in maintenance mode.
	NodeHealthMaintenance NodeHealth = "Maintenance"
)

// MachineNodePoolStatus is what the node pool controller observed.
type MachineNodePoolStatus struct {
	// observedGeneration is the generation the status is about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready says whether every node of the pool is labelled as
	// the pool says; its message names the nodes that could not be (missing,
	// or in another group's pool).
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// nodePool is the health of each pool node, in the order of spec.nodePool.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=1000
	NodePool []NodePoolNodeStatus `json:"nodePool,omitempty"`
}

// NodePoolNodeStatus is the health of one pool node.
type NodePoolNodeStatus struct {
	// name of the Node.
	// +required
	Name string `json:"name"`
	// condition of the node.
	// +required
	Condition NodeHealth `json:"condition"`
}

// +kubebuilder:object:root=true

// MachineNodePoolList is a list of MachineNodePools.
type MachineNodePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineNodePool `json:"items"`
}
