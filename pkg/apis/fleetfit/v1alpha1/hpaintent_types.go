package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// HPAIntent states the hardware a workload needs — resources that must be
// free on one node, and node features — so that the decisions of the
// Placement it refers to only pick clusters that can really run it. When it
// carries the workload's manifests, fleetfit also delivers them to the chosen
// clusters with their pods adjusted to land on the right nodes.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=hpai,categories=fleetfit
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.spec.placementRef.name`
// +kubebuilder:printcolumn:name="Consumers",type=string,JSONPath=`.spec.consumers[*].name`
// +kubebuilder:printcolumn:name="Valid",type=string,JSONPath=`.status.conditions[?(@.type=="Valid")].status`,priority=1
// +kubebuilder:printcolumn:name="Scheduled",type=string,JSONPath=`.status.conditions[?(@.type=="Scheduled")].status`
// +kubebuilder:printcolumn:name="Delivered",type=string,JSONPath=`.status.conditions[?(@.type=="Delivered")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HPAIntent struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec HPAIntentSpec `json:"spec"`
	// +optional
	Status HPAIntentStatus `json:"status,omitempty"`
}

// HPAIntentSpec is what the user asks for.
//
// +kubebuilder:validation:XValidation:rule="!has(self.split) || !has(self.consumers) || self.consumers.all(c, c.target.kind in ['Deployment', 'StatefulSet', 'ReplicaSet', 'Job'])",message="split divides a workload's replicas, so its consumers must target a Deployment, StatefulSet, ReplicaSet or Job: a DaemonSet runs one pod per node, and a Pod or a CronJob has no replicas to divide; remove split, or give the workload an HPAIntent of its own",fieldPath=".split"
// +kubebuilder:validation:XValidation:rule="!has(self.split) || !has(self.consumers) || self.consumers.all(c, c.target.apiVersion == self.consumers[0].target.apiVersion && c.target.kind == self.consumers[0].target.kind && c.target.name == self.consumers[0].target.name)",message="split divides the replicas of one workload object, so all consumers must target the same object (containers of one pod); give each other workload an HPAIntent of its own",fieldPath=".split"
// +kubebuilder:validation:XValidation:rule="!has(self.split) || !has(self.split.minReplicas) || !has(self.consumers) || self.consumers.all(c, !has(c.replicas) || c.replicas >= self.split.minReplicas)",message="split.minReplicas is more than the consumers' replicas, the total to divide, so no cluster could get its smallest share; lower minReplicas or raise replicas",fieldPath=".split.minReplicas"
type HPAIntentSpec struct {
	// placementRef names the Placement, in the intent's namespace, whose
	// decisions must honour these requirements.
	// +required
	PlacementRef PlacementRef `json:"placementRef"`

	// consumers are the workload parts (a container of a pod template) that
	// need hardware, each with its requirements. An intent without consumers
	// is accepted, as EMCO's API builds an intent step by step, but it is
	// incomplete: not valid, and it changes nothing about its Placement's
	// decisions until it has consumers.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Consumers []ResourceConsumer `json:"consumers,omitempty"`

	// workload, when set, holds the objects that fleetfit delivers to every
	// chosen cluster through a ManifestWork, with each consumer's pod template
	// adjusted to its requirements.
	// +optional
	Workload *Workload `json:"workload,omitempty"`

	// rescheduling says what the hub does when the delivered pods stay
	// unschedulable on a decided cluster (the cluster's agent reports them).
	// Left out, it is IfUnschedulable with the defaults below.
	// +optional
	Rescheduling *Rescheduling `json:"rescheduling,omitempty"`

	// split, when set, divides the replicas of the workload among the
	// Placement's decided clusters, by what each can hold (the default),
	// evenly, or by weights, instead of running them all on every decided
	// cluster. The consumers' replicas are then the total. Its consumers must
	// all target one workload object with replicas (a Deployment,
	// StatefulSet, ReplicaSet or Job).
	// +optional
	Split *ReplicaSplit `json:"split,omitempty"`

	// scaleUp says whether the intent may go to a cluster whose autoscaling
	// pool must first add nodes (IfNeeded, the default, after the clusters
	// that fit now) and how long its pods may wait there.
	// +optional
	ScaleUp *ScaleUp `json:"scaleUp,omitempty"`
}

// PlacementRef names an OCM Placement in the same namespace.
type PlacementRef struct {
	// name of the Placement.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ResourceConsumer is one part of the workload that needs hardware: a
// container in the pod template of the target object.
//
// +kubebuilder:validation:XValidation:rule="!has(self.requirements) || !self.requirements.exists(r, has(r.resource)) || (has(self.target.container) && size(self.target.container) > 0)",message="target.container is required when the consumer has resource requirements: it names the container that gets the requests and limits"
// +kubebuilder:validation:XValidation:rule="!has(self.exclusiveCPU) || !self.exclusiveCPU || has(self.requirements) && self.requirements.exists(r, has(r.resource) && r.resource.name == 'cpu' && r.mandatory && has(r.resource.limits) && !string(r.resource.limits).matches('[eE][-+]?[0-9]{4}') && isQuantity(string(r.resource.limits)) && quantity(string(r.resource.limits)).isInteger() && (!has(r.resource.requests) || (isQuantity(string(r.resource.requests)) && quantity(string(r.resource.requests)).compareTo(quantity(string(r.resource.limits))) == 0)))",message="exclusiveCPU needs a mandatory cpu requirement with whole cores and requests equal to limits (Guaranteed QoS), e.g. requests: 4, limits: 4"
// +kubebuilder:validation:XValidation:rule="!has(self.exclusiveCPU) || !self.exclusiveCPU || has(self.requirements) && self.requirements.exists(r, has(r.resource) && r.resource.name == 'memory' && r.mandatory && has(r.resource.limits) && !string(r.resource.limits).matches('[eE][-+]?[0-9]{4}') && isQuantity(string(r.resource.limits)) && (!has(r.resource.requests) || (isQuantity(string(r.resource.requests)) && quantity(string(r.resource.requests)).compareTo(quantity(string(r.resource.limits))) == 0)))",message="exclusiveCPU needs a mandatory memory requirement with requests equal to limits (Guaranteed QoS)"
// +kubebuilder:validation:XValidation:rule="!has(self.requirements) || self.requirements.all(a, !has(a.resource) || (has(a.mandatory) && !a.mandatory) || self.requirements.exists_one(b, has(b.resource) && (!has(b.mandatory) || b.mandatory) && b.resource.name == a.resource.name))",message="two mandatory requirements ask for amounts of the same resource, but a container has one request and one limit per resource; keep one of them, or make the other optional",fieldPath=".requirements"
// +kubebuilder:validation:XValidation:rule="!has(self.requirements) || !self.requirements.exists(r, has(r.machineType)) || !self.requirements.exists(r, has(r.resource))",message="a consumer that takes a machine type gets its cpu, memory and GPUs from the type, which the managed cluster's agent sets on its container: remove its resource requirements, or its machineType requirements",fieldPath=".requirements"
// +kubebuilder:validation:XValidation:rule="!has(self.requirements) || self.requirements.filter(r, has(r.machineType) && (!has(r.mandatory) || r.mandatory)).size() <= 1",message="each replica takes one machine: keep one mandatory machineType requirement and make the others optional (mandatory: false)",fieldPath=".requirements"
type ResourceConsumer struct {
	// name identifies the consumer within the intent.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// target is the workload object and container the requirements bind to.
	// +required
	Target ConsumerTarget `json:"target"`

	// replicas is how many pods of this consumer one cluster must host.
	// Defaults to the target's replicas when the workload is given, else 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	Replicas *int32 `json:"replicas,omitempty"`

	// exclusiveCPU asserts that the consumer gets exclusive cores from the
	// kubelet's static CPU manager: its cpu and memory requirements must have
	// requests equal to limits, and whole cores of cpu.
	// +optional
	ExclusiveCPU bool `json:"exclusiveCPU,omitempty"`

	// requirements are the resources and node features the consumer needs.
	// A consumer without requirements is accepted, as EMCO's API adds them
	// one by one, but its intent is incomplete until it has some.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	Requirements []ResourceRequirement `json:"requirements,omitempty"`
}

// ConsumerTarget names a workload object and one of its containers.
type ConsumerTarget struct {
	// apiVersion of the object, e.g. apps/v1.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`

	// kind of the object.
	// +required
	// +kubebuilder:validation:Enum=Deployment;StatefulSet;DaemonSet;ReplicaSet;Job;CronJob;Pod
	Kind string `json:"kind"`

	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// container is the name of the container that gets the resources.
	// Required when the consumer has resource requirements.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Container string `json:"container,omitempty"`
}

// ResourceRequirement is one thing a consumer needs: an amount of a resource
// on one node, or a node feature.
//
// +kubebuilder:validation:XValidation:rule="[has(self.resource), has(self.feature), has(self.machineType), has(self.devices)].filter(x, x).size() == 1",message="set exactly one of resource (an amount to have free on a node), feature (a node label requirement), machineType (a machine of a MachineGroup's type for each replica) or devices (DRA devices on the node)"
// +kubebuilder:validation:XValidation:rule="!has(self.weight) || !self.mandatory",message="weight ranks optional requirements only: set mandatory: false, or remove weight"
// +kubebuilder:validation:XValidation:rule="!has(self.devices) || self.mandatory",message="devices are mandatory: a pod gets its devices or does not start; remove mandatory: false"
type ResourceRequirement struct {
	// name identifies the requirement within the consumer.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`

	// mandatory requirements must be met for a cluster to be chosen; optional
	// ones only add to a cluster's score, in proportion to their weight.
	// +optional
	// +kubebuilder:default=true
	Mandatory *bool `json:"mandatory,omitempty"`

	// weight, 1 to 10, ranks an optional requirement; 10 matters most.
	// Defaults to 1 for optional requirements.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	Weight *int32 `json:"weight,omitempty"`

	// resource is an amount that must be free on the node that runs the pod.
	// +optional
	Resource *ResourceAmount `json:"resource,omitempty"`

	// feature is a node label the node that runs the pod must satisfy.
	// +optional
	Feature *FeatureRequirement `json:"feature,omitempty"`

	// machineType asks for one machine of a managed cluster's MachineGroup
	// for each replica: a cluster qualifies while that many of its reserved
	// machines of the type are free, and the delivered pods are the group's
	// guests, which the cluster's agent gives the type's cpu, memory and GPUs.
	// +optional
	MachineType *MachineTypeRequirement `json:"machineType,omitempty"`

	// devices asks for Dynamic Resource Allocation devices on the node that
	// runs the pod, as a request of a ResourceClaim does; the requirement's
	// name is the request's name in the ResourceClaimTemplate fleetfit
	// delivers with the workload.
	// +optional
	Devices *DeviceRequirement `json:"devices,omitempty"`
}

// MachineTypeRequirement names a machine type of a MachineGroup, as the
// managed clusters' agents report them in their ClusterInventory.
type MachineTypeRequirement struct {
	// group is the name of the MachineGroup.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Group string `json:"group"`
	// name of the machine type.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=50
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
}

// ResourceAmount is an allocatable resource with Kubernetes requests and limits.
//
// +kubebuilder:validation:XValidation:rule="has(self.requests) || has(self.limits)",message="set requests, limits or both"
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || !has(self.limits) || string(self.requests).matches('[eE][-+]?[0-9]{4}') || string(self.limits).matches('[eE][-+]?[0-9]{4}') || !isQuantity(string(self.requests)) || !isQuantity(string(self.limits)) || quantity(string(self.requests)).compareTo(quantity(string(self.limits))) <= 0",messageExpression="'requests (' + string(self.requests) + ') must not exceed limits (' + string(self.limits) + ')'"
// +kubebuilder:validation:XValidation:rule="(!has(self.requests) || !string(self.requests).startsWith('-')) && (!has(self.limits) || !string(self.limits).startsWith('-'))",message="requests and limits must not be negative"
// +kubebuilder:validation:XValidation:rule="!has(self.units) || ((!has(self.requests) || string(self.requests).matches('[eE][-+]?[0-9]{4}') || (isQuantity(string(self.requests)) && (quantity(string(self.requests)).isInteger() || quantity(string(self.requests)).compareTo(quantity(has(self.units) && self.units in {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'} ? {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'}[self.units] : '9223372036854775')) > 0))) && (!has(self.limits) || string(self.limits).matches('[eE][-+]?[0-9]{4}') || (isQuantity(string(self.limits)) && (quantity(string(self.limits)).isInteger() || quantity(string(self.limits)).compareTo(quantity(has(self.units) && self.units in {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'} ? {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'}[self.units] : '9223372036854775')) > 0))))",message="with units, requests and limits are whole numbers of that unit (EMCO's legacy form, e.g. requests: 1000 with units: MB); without units use Kubernetes quantities such as 1000M or 2Gi"
// +kubebuilder:validation:XValidation:rule="(!has(self.requests) || !string(self.requests).matches('[eE][-+]?[0-9]{4}')) && (!has(self.limits) || !string(self.limits).matches('[eE][-+]?[0-9]{4}'))",message="write requests and limits with an exponent of at most three digits, such as 4e9 or 4G: longer exponents give amounts far beyond what fleetfit can count, or below the smallest, 1n"
// +kubebuilder:validation:XValidation:rule="!has(self.requests) || string(self.requests).startsWith('-') || string(self.requests).matches('[eE]-[0-9]{4}') || (string(self.requests).matches('[eE][+]?[0-9]{4}') ? !string(self.requests).matches('[1-9][0-9.]*[eE]') : (!isQuantity(string(self.requests)) || quantity(string(self.requests)).compareTo(quantity(has(self.units) && self.units in {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'} ? {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'}[self.units] : '9223372036854775')) <= 0))",messageExpression="'must be at most ' + (has(self.units) && self.units in {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'} ? {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'}[self.units] + ' with units ' + self.units : '9223372036854775') + ', the largest amount fleetfit can count (about 8 PiB of memory, 9.2e15 of other resources)'",fieldPath=".requests"
// +kubebuilder:validation:XValidation:rule="!has(self.limits) || string(self.limits).startsWith('-') || string(self.limits).matches('[eE]-[0-9]{4}') || (string(self.limits).matches('[eE][+]?[0-9]{4}') ? !string(self.limits).matches('[1-9][0-9.]*[eE]') : (!isQuantity(string(self.limits)) || quantity(string(self.limits)).compareTo(quantity(has(self.units) && self.units in {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'} ? {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'}[self.units] : '9223372036854775')) <= 0))",messageExpression="'must be at most ' + (has(self.units) && self.units in {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'} ? {'K': '9223372036854', 'KB': '9223372036854', 'M': '9223372036', 'MB': '9223372036', 'G': '9223372', 'GB': '9223372', 'T': '9223', 'TB': '9223', 'Ki': '9007199254740', 'KiB': '9007199254740', 'Mi': '8796093022', 'MiB': '8796093022', 'Gi': '8589934', 'GiB': '8589934', 'Ti': '8388', 'TiB': '8388'}[self.units] + ' with units ' + self.units : '9223372036854775') + ', the largest amount fleetfit can count (about 8 PiB of memory, 9.2e15 of other resources)'",fieldPath=".limits"
type ResourceAmount struct {
	// name is the Kubernetes resource name: cpu, memory, nvidia.com/gpu,
	// intel.com/qat, hugepages-2Mi or any extended resource.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// requests is the amount the pod is guaranteed, and what must be free on
	// one node. Defaults to limits, as Kubernetes does.
	// +optional
	Requests *resource.Quantity `json:"requests,omitempty"`

	// limits caps what the container may use.
	// +optional
	Limits *resource.Quantity `json:"limits,omitempty"`

	// units is EMCO's legacy unit for integer requests and limits, e.g. MB.
	// Prefer Kubernetes quantities (1000M, 2Gi) and leave units empty.
	// +optional
	// +kubebuilder:validation:Enum=K;M;G;T;Ki;Mi;Gi;Ti;KB;MB;GB;TB;KiB;MiB;GiB;TiB
	Units string `json:"units,omitempty"`
}

// FeatureRequirement is a requirement on a node label, with the operators of
// a Kubernetes NodeSelectorRequirement. NotIn and DoesNotExist forbid a
// feature; In with several values accepts any of them.
//
// +kubebuilder:validation:XValidation:rule="!has(self.value) || !has(self.values)",message="set value (EMCO's shorthand for operator In with one value) or values, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.value) || self.operator == 'In'",message="value is shorthand for operator In; with other operators use values"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Exists', 'DoesNotExist']) || (!has(self.value) && (!has(self.values) || size(self.values) == 0))",messageExpression="'operator ' + self.operator + ' takes no values'"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['In', 'NotIn']) || has(self.value) || (has(self.values) && size(self.values) > 0)",messageExpression="'operator ' + self.operator + ' needs at least one value'"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt']) || (has(self.values) && size(self.values) == 1 && self.values[0].matches('^-?[0-9]+$'))",messageExpression="'operator ' + self.operator + ' takes exactly one integer value, e.g. values: [\"8\"]'"
// +kubebuilder:validation:XValidation:rule="!(self.operator in ['Gt', 'Lt']) || !has(self.values) || size(self.values) != 1 || !self.values[0].matches('^-?[0-9]+$') || size(self.values[0].find('[1-9][0-9]*$')) < 19 || (size(self.values[0].find('[1-9][0-9]*$')) == 19 && self.values[0].find('[1-9][0-9]*$') <= (self.values[0].startsWith('-') ? '9223372036854775808' : '9223372036854775807'))",messageExpression="'operator ' + self.operator + ' compares 64-bit integers, from -9223372036854775808 to 9223372036854775807, as node affinity does; ' + self.values[0] + ' is out of range'"
type FeatureRequirement struct {
	// key is the node label, e.g. feature.node.kubernetes.io/cpu-cpuid.AVX512F
	// or nvidia.com/gpu.product.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`

	// operator relates the node's label to values.
	// +optional
	// +kubebuilder:default=In
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist;Gt;Lt
	Operator corev1.NodeSelectorOperator `json:"operator,omitempty"`

	// values for In and NotIn (one or more), Gt and Lt (one integer).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	Values []string `json:"values,omitempty"`

	// value is EMCO's shorthand for operator In with this one value.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value,omitempty"`
}

// Workload holds the objects fleetfit delivers to the chosen clusters.
type Workload struct {
	// manifests are whole Kubernetes objects, as in a ManifestWork.
	// +optional
	// +listType=atomic
	Manifests []Manifest `json:"manifests,omitempty"`
}

// Manifest is one Kubernetes object to deliver.
//
// +kubebuilder:validation:EmbeddedResource
// +kubebuilder:pruning:PreserveUnknownFields
type Manifest struct {
	runtime.RawExtension `json:",inline"`
}

// Condition types of an HPAIntent.
const (
	// ConditionValid is False when the intent cannot be used as it is (for
	// example its placement or a consumer's target is missing); the message
	// says what to fix. The Placement keeps its decisions meanwhile.
	ConditionValid = "Valid"
	// ConditionScheduled is True when the Placement's decisions honour the
	// intent, and False when no or too few clusters can.
	ConditionScheduled = "Scheduled"
	// ConditionDelivered is True when every decided cluster has applied the
	// workload and reports it available.
	ConditionDelivered = "Delivered"
)

// HPAIntentStatus is what fleetfit observed and decided.
type HPAIntentStatus struct {
	// observedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Valid, Scheduled, Delivered.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// scheduledPlacement is the Placement whose decisions this intent last
	// shaped. When spec.placementRef changes to a Placement that does not
	// exist, that Placement keeps its decisions instead of being rescheduled
	// without the intent's requirements.
	// +optional
	ScheduledPlacement string `json:"scheduledPlacement,omitempty"`

	// candidates are, per consumer, the clusters that can host it, in the
	// compact form EMCO describes: whichever of an allow list or a deny list
	// is shorter.
	// +optional
	// +listType=map
	// +listMapKey=consumer
	Candidates []ConsumerCandidates `json:"candidates,omitempty"`

	// clusters is the delivery state of the workload on each decided cluster.
	// +optional
	// +listType=map
	// +listMapKey=clusterName
	Clusters []ClusterDelivery `json:"clusters,omitempty"`

	// reservations are the clusters this intent was newly scheduled onto
	// whose ClusterInventory did not show its pods yet. Until the inventory
	// shows them, or the reservation times out, the hub counts the intent's
	// amounts as taken there when it schedules other placements, so a burst
	// of intents never books the same free nodes twice. They are kept here,
	// not only in the hub's memory, so that a restarted hub or a new leader
	// holds them too.
	// +optional
	// +listType=map
	// +listMapKey=clusterName
	// +kubebuilder:validation:MaxItems=1000
	Reservations []ClusterReservation `json:"reservations,omitempty"`

	// moves are the times the hub moved the workload away from a cluster
	// where its pods stayed unschedulable, oldest first, the last 20. They
	// hold the back-off of each cluster left and the moves of the last hour,
	// here rather than only in the hub's memory, so that a restarted hub
	// neither forgets a back-off nor moves the workload twice.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	Moves []ClusterMove `json:"moves,omitempty"`

	// split is how the replicas are divided among the decided clusters,
	// for an intent with spec.split.
	// +optional
	Split *SplitStatus `json:"split,omitempty"`
}

// ClusterReservation is capacity held for an intent on a cluster it was newly
// scheduled onto.
type ClusterReservation struct {
	// clusterName is the managed cluster.
	// +kubebuilder:validation:MaxLength=253
	ClusterName string `json:"clusterName"`
	// since is when the cluster was decided; the reservation lapses a
	// while after it (the hub's reservation timeout) even if the inventory
	// never shows the pods.
	Since metav1.Time `json:"since"`
	// requestedBefore are the cluster's requested totals when it was
	// decided: once its inventory shows them grown by the intent's amounts,
	// the pods are running and the reservation ends.
	// +optional
	RequestedBefore corev1.ResourceList `json:"requestedBefore,omitempty"`
}

// CandidateMode says how to read a candidate cluster list.
// +kubebuilder:validation:Enum=Allow;Deny
type CandidateMode string

const (
	// CandidateAllow lists the only clusters that can host the consumer.
	CandidateAllow CandidateMode = "Allow"
	// CandidateDeny lists the clusters that cannot host the consumer; every
	// other cluster of the placement's cluster sets can.
	CandidateDeny CandidateMode = "Deny"
)

// ConsumerCandidates is the partition candidate list of one consumer.
type ConsumerCandidates struct {
	// consumer is the name of the consumer.
	// +required
	Consumer string `json:"consumer"`
	// replicas is the number of pods of the consumer each cluster must host.
	// +required
	Replicas int32 `json:"replicas"`
	// mode says whether clusters is an allow list or a deny list.
	// +required
	Mode CandidateMode `json:"mode"`
	// clusters, sorted by name. In a large fleet the list is cut (see
	// omittedClusters), so that the status stays small enough to write.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=1000
	Clusters []string `json:"clusters,omitempty"`
	// omittedClusters is how many clusters of the list were left out of
	// clusters, the last ones by name: the list holds len(clusters) +
	// omittedClusters clusters in all.
	// +optional
	OmittedClusters int32 `json:"omittedClusters,omitempty"`
}

// DeliveryState summarises a ManifestWork's status on one cluster.
// +kubebuilder:validation:Enum=Pending;Applied;Available;Degraded;Failed
type DeliveryState string

// Delivery states, in the order a healthy delivery goes through them.
const (
	DeliveryPending   DeliveryState = "Pending"
	DeliveryApplied   DeliveryState = "Applied"
	DeliveryAvailable DeliveryState = "Available"
	DeliveryDegraded  DeliveryState = "Degraded"
	DeliveryFailed    DeliveryState = "Failed"
)

// ClusterDelivery is the delivery state of the workload on one cluster.
type ClusterDelivery struct {
	// clusterName is the managed cluster.
	// +required
	ClusterName string `json:"clusterName"`
	// manifestWork is the name of the ManifestWork in the cluster's namespace.
	// +optional
	ManifestWork string `json:"manifestWork,omitempty"`
	// state of the delivery.
	// +required
	State DeliveryState `json:"state"`
	// message from the ManifestWork's conditions, when there is one.
	// +optional
	Message string `json:"message,omitempty"`
	// lastTransitionTime is when state last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// replicas is the workload's replicas delivered there: the cluster's
	// share for a split intent.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// readyReplicas is how many of them the cluster's work agent reports
	// ready.
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`
}

// HPAIntentList is a list of HPAIntents.
//
// +kubebuilder:object:root=true
type HPAIntentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HPAIntent `json:"items"`
}
