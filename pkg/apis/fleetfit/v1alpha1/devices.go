package v1alpha1

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// DeviceRequirement asks for devices of a managed cluster's Dynamic Resource
// Allocation drivers, the way one request of a ResourceClaim does: count
// devices of a DeviceClass that pass every selector, all on the node that
// runs the pod, beside its cpu and memory. fleetfit delivers the workload
// with a ResourceClaimTemplate holding the request, so the cluster's
// kube-scheduler allocates the devices.
//
// +kubebuilder:validation:XValidation:rule="!has(self.count) || self.count >= 1",message="count must be at least 1"
type DeviceRequirement struct {
	// deviceClassName names the DeviceClass on the managed clusters, such as
	// gpu.example.com. Only clusters whose agent reports devices of that
	// class qualify.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DeviceClassName string `json:"deviceClassName"`

	// count of devices each pod needs, 1 to 32 (a claim's limit). Defaults
	// to 1.
	// +optional
	// +kubebuilder:validation:Maximum=32
	Count *int32 `json:"count,omitempty"`

	// selectors are CEL expressions over a device, as in a ResourceClaim's
	// request, e.g. device.attributes["gpu.example.com"].model == "A100" or
	// device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0.
	// A device must pass all of them.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Selectors []DeviceSelector `json:"selectors,omitempty"`
}

// DeviceSelector is one selector of a DeviceRequirement, written as in a
// ResourceClaim.
type DeviceSelector struct {
	// cel holds the expression.
	// +required
	CEL *CELDeviceSelector `json:"cel"`
}

// MaxDeviceSelectorLength bounds a selector's expression, as the DRA API
// does.
const MaxDeviceSelectorLength = 10 * 1024

// CELDeviceSelector is a CEL expression over one device, evaluated with
// Kubernetes' DRA environment: device.driver, device.attributes and
// device.capacity, grouped by domain.
type CELDeviceSelector struct {
	// expression must evaluate to a bool.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=10240
	Expression string `json:"expression"`
}

// CountOrDefault returns count, or 1 when it is not set.
func (d *DeviceRequirement) CountOrDefault() int32 {
	if d.Count == nil {
		return 1
	}
	return *d.Count
}

// Bounds of ReportedDevices.
const (
	// MaxReportedDeviceKinds bounds ReportedDevices.Kinds.
	MaxReportedDeviceKinds = 64
	// MaxDeviceKindAttributes bounds the attributes and the capacities of one
	// reported kind (the DRA API allows 32 per device together).
	MaxDeviceKindAttributes = 32
	// MaxDeviceKindClasses bounds DeviceKind.Classes.
	MaxDeviceKindClasses = 16
)

// DeviceResourcePrefix starts the resource names under which node shapes
// count the devices of a kind (DeviceKind.Name).
const DeviceResourcePrefix = "devices.fleetfit.io/"

// ReportedDevices are a cluster's Dynamic Resource Allocation devices as
// its agent sees them: kinds of alike devices, counted per node in the node
// shapes under each kind's name.
type ReportedDevices struct {
	// served is true when the cluster serves resource.k8s.io/v1; a cluster
	// without it has no devices to report.
	// +optional
	Served bool `json:"served,omitempty"`

	// kinds of devices, sorted by name. Devices of one driver with the same
	// attributes (but those in ignoredAttributes), capacities and classes are
	// one kind.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	Kinds []DeviceKind `json:"kinds,omitempty"`

	// ignoredAttributes are the attribute names left out of kinds because
	// they tell devices apart rather than describe them (uuid, index...). A
	// selector that reads one cannot be decided on the hub.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	IgnoredAttributes []string `json:"ignoredAttributes,omitempty"`

	// omittedDevices counts devices left out of the report: those of kinds
	// beyond the first 64 (the kinds with the fewest devices are left out),
	// of pools the agent did not see complete, not bound to one node, or
	// shared (allowMultipleAllocations, consumed counters), which this
	// version does not count.
	// +optional
	// +kubebuilder:validation:Minimum=0
	OmittedDevices int32 `json:"omittedDevices,omitempty"`

	// message says why devices were omitted, briefly.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Message string `json:"message,omitempty"`
}

// DeviceKind is one kind of alike devices.
type DeviceKind struct {
	// name is the resource name under which node shapes count the kind's
	// devices: devices.fleetfit.io/ and a hash of what the devices share, so
	// alike devices have the same name on every cluster.
	// +required
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// driver that publishes the devices.
	// +required
	// +kubebuilder:validation:MaxLength=63
	Driver string `json:"driver"`

	// classes are the DeviceClasses whose selectors the devices pass, sorted.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Classes []string `json:"classes,omitempty"`

	// attributes of the devices, as their ResourceSlices give them.
	// +optional
	Attributes map[resourcev1.QualifiedName]resourcev1.DeviceAttribute `json:"attributes,omitempty"`

	// capacity of each device, as their ResourceSlices give it.
	// +optional
	Capacity map[resourcev1.QualifiedName]resourcev1.DeviceCapacity `json:"capacity,omitempty"`
}
