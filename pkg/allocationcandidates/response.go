package allocationcandidates

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Response is the answer to GET /allocation_candidates, in the shape of OpenStack Placement's
// (microversion 1.36): provider ids are cluster names and "<cluster>/<shape>/<i>" node ids,
// amounts Kubernetes quantity strings keyed by Kubernetes resource names.
type Response struct {
	AllocationRequests []AllocationRequest         `json:"allocation_requests"`
	ProviderSummaries  map[string]*ProviderSummary `json:"provider_summaries"`
	// Truncated, not part of OpenStack's shape, is set when there are more candidates than
	// the answer holds: without a limit, or with one over the most an answer holds, the
	// answer is cut there, as a paging API says that there is more.
	Truncated *Truncation `json:"truncated,omitempty"`
}

// Truncation says that an answer was cut, where, and what to change.
type Truncation struct {
	// Candidates is how many candidates the answer holds.
	Candidates int    `json:"candidates"`
	Detail     string `json:"detail"`
}

// AllocationRequest is one candidate: what each node would give, and which nodes satisfy
// each request group (the suffix, "" for the unnumbered group).
type AllocationRequest struct {
	Allocations map[string]Allocation `json:"allocations"`
	Mappings    map[string][]string   `json:"mappings"`

	// cluster and groups are for a table; they are not part of OpenStack's shape.
	cluster string
	groups  []GroupPlacement
}

// Cluster is the candidate's cluster: the root provider of all its nodes.
func (ar *AllocationRequest) Cluster() string { return ar.cluster }

// Groups says where each request group of the candidate went: the unnumbered group first,
// then the numbered ones in suffix order. Unlike Allocations, which add up what each node
// gives, it keeps apart groups that share a node (group_policy=none).
func (ar *AllocationRequest) Groups() []GroupPlacement { return ar.groups }

// Allocation is what one provider gives to a candidate.
type Allocation struct {
	Resources map[corev1.ResourceName]resource.Quantity `json:"resources"`
}

// ProviderSummary describes a provider of some candidate: a cluster (the root, with no
// inventory of its own) or a node.
type ProviderSummary struct {
	Resources map[corev1.ResourceName]ResourceSummary `json:"resources"`
	// Traits are the node's reported labels as key=value, sorted.
	Traits             []string `json:"traits"`
	ParentProviderUUID *string  `json:"parent_provider_uuid"`
	RootProviderUUID   string   `json:"root_provider_uuid"`
}

// ResourceSummary is a node's allocatable amount and how much of it is not free (requested by
// its pods, held by the hub's in-flight reservations, or lost to the report's rounding).
type ResourceSummary struct {
	Capacity resource.Quantity `json:"capacity"`
	Used     resource.Quantity `json:"used"`
}

// GroupPlacement says where one request group of a candidate went: Nodes[i] is the id of the
// node that takes Resources[i].
type GroupPlacement struct {
	Suffix    string
	Nodes     []string
	Resources []Resource
}
