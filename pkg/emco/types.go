package emco

import "encoding/json"

// Metadata is the metadata of every EMCO resource. Description and userData
// are free text, kept in annotations and returned unchanged.
type Metadata struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	UserData1   string `json:"userData1"`
	UserData2   string `json:"userData2"`
}

// Intent is an HPA intent.
type Intent struct {
	Metadata Metadata   `json:"metadata"`
	Spec     IntentSpec `json:"spec"`
}

// IntentSpec names the app whose Placement the intent shapes.
type IntentSpec struct {
	// App is the app, and the name of its Placement in the project's namespace.
	App string `json:"app"`
	// AppName is how EMCO's API section spells app; it is accepted in
	// requests and never returned.
	AppName string `json:"appName,omitempty"`
	// ResourceConsumers are returned by GET, with their requirements. A
	// request must not set them: consumers are posted to hpa-resource-consumers.
	ResourceConsumers []Consumer `json:"resourceConsumers"`
}

// Consumer is an HPA resource consumer: a container of a workload.
type Consumer struct {
	Metadata Metadata     `json:"metadata"`
	Spec     ConsumerSpec `json:"spec"`
}

// ConsumerSpec names the workload object and its container.
type ConsumerSpec struct {
	Consumer ConsumerRef `json:"consumer"`
	// ResourceRequirements are returned by GET. A request must not set them:
	// requirements are posted to resource-requirements.
	ResourceRequirements []Requirement `json:"resourceRequirements"`
}

// ConsumerRef is EMCO's consumer: the object (apiVersion, kind, name) and the
// container that gets the resources, required when any is allocatable.
type ConsumerRef struct {
	APIVersion    string `json:"apiVersion"`
	Kind          string `json:"kind"`
	Name          string `json:"name"`
	ContainerName string `json:"container-name,omitempty"`
}

// Requirement is a resource requirement of a consumer.
type Requirement struct {
	Metadata Metadata        `json:"metadata"`
	Spec     RequirementSpec `json:"spec"`
}

// RequirementSpec is an allocatable resource (allocatable true: name,
// requests, limits, units) or a non-allocatable one, a node label (allocatable
// false: key or name, and value).
type RequirementSpec struct {
	// Mandatory defaults to true.
	Mandatory *bool `json:"mandatory,omitempty"`
	// Weight, 1 to 10, ranks an optional requirement.
	Weight      *int32 `json:"weight,omitempty"`
	Allocatable *bool  `json:"allocatable"`
	// Name is the resource (cpu, memory, nvidia.com/gpu ...), or, for a
	// non-allocatable requirement, the node label as EMCO's design writes it.
	Name string `json:"name,omitempty"`
	// Key is the node label of a non-allocatable requirement.
	Key string `json:"key,omitempty"`
	// Requests and Limits are EMCO's integers (with Units) or Kubernetes
	// quantities, as JSON numbers or strings; they are returned as posted.
	Requests json.RawMessage `json:"requests,omitempty"`
	Limits   json.RawMessage `json:"limits,omitempty"`
	Units    string          `json:"units,omitempty"`
	// Value is the label value a non-allocatable requirement asks for
	// (operator In).
	Value string `json:"value,omitempty"`
	// Operator and Values are fleetfit's: a node label requirement with the
	// operators of a NodeSelectorRequirement (Exists, NotIn, ...), for
	// non-allocatable requirements that value cannot state.
	Operator string   `json:"operator,omitempty"`
	Values   []string `json:"values,omitempty"`
}

// Status is what GET …/hpa-intents/{intent}/status returns: the intent's
// conditions, the clusters its Placement decides and the candidates of each
// consumer.
type Status struct {
	Placement string `json:"placement"`
	// Valid, Scheduled and Delivered are the intent's conditions, or nil
	// while the hub has not set them.
	Valid     *Condition `json:"valid"`
	Scheduled *Condition `json:"scheduled"`
	Delivered *Condition `json:"delivered,omitempty"`
	// Clusters are the clusters the Placement's decisions name, sorted.
	Clusters   []string    `json:"clusters"`
	Candidates []Candidate `json:"candidates"`
}

// Condition is one condition of the intent.
type Condition struct {
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Current is false when the condition was set for an older generation
	// of the intent: the hub has not judged the latest change yet.
	Current bool `json:"current"`
}

// Candidate is EMCO's partition candidate list of one consumer: an allow or a
// deny list of clusters, whichever is shorter.
type Candidate struct {
	Consumer        string   `json:"consumer"`
	Replicas        int32    `json:"replicas"`
	Mode            string   `json:"mode"`
	Clusters        []string `json:"clusters"`
	OmittedClusters int32    `json:"omittedClusters,omitempty"`
}
