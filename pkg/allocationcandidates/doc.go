// Package allocationcandidates answers OpenStack Placement's question over the fleet — which clusters,
// and which nodes in them, could take this request right now? — with the query language of
// Placement's GET /allocation_candidates (microversion 1.36): resources, required, numbered
// resourcesN/requiredN, member_of, group_policy and limit.
//
// # Mapping
//
// A provider tree is a managed cluster: the root provider, whose id is the cluster's name and
// which has no inventory of its own. Each node is a child provider. The hub knows a cluster's
// nodes through its inventory's shapes, not by name, so a node's id is
// "<cluster>/<shape>/<i>": the i-th node (from 0) of the inventory shape, numbered in the order
// of the shape's free vectors once the hub's in-flight reservations are taken away. Such an id
// stands for one node the summary guarantees (see package inventory's Accuracy section), not
// a particular named one, and nodes of one free vector are interchangeable.
//
// Resource classes are Kubernetes resource names with Kubernetes quantities; VCPU, MEMORY_MB
// and DISK_GB are aliases of cpu, memory (MiB) and ephemeral-storage (GiB). Traits are node
// label requirements; HW_CPU_X86_<FLAG> stands for node-feature-discovery's
// feature.node.kubernetes.io/cpu-cpuid.<FLAG>=true. member_of names ManagedClusterSets.
//
// # Semantics
//
// Free is what a cluster's inventory reports free, minus the hub's in-flight reservations
// (placed with inventory.Allocation, as HardwareFit places them); only available clusters with
// a fresh inventory, and their Ready, schedulable nodes, count. A numbered group is one node
// with all its traits and its resources. The unnumbered group takes each class whole from one
// node; it is placed on a single node when some node can take it all (one candidate per such
// node), and spread over several nodes only when none can (then the first spread found, whose
// nodes together have its required traits). isolate puts numbered groups on different nodes;
// none lets them share one when it has room for both. A node with a NoSchedule or NoExecute
// taint is left out unless the taint is an extended resource's own (nvidia.com/gpu:NoSchedule)
// and the group asks for that resource, the rule HardwareFit applies through the tolerations
// Kubernetes' ExtendedResourceToleration admission gives pods.
//
// Clusters are searched in parallel, in rounds, but answered cluster by cluster in name order;
// within a cluster, the numbered groups, in
// suffix order, try the node runs of the inventory (shape by shape, free vector by free vector)
// in turn, and within a run of identical nodes a group takes the first node with room. So
// candidates differ in the nodes they use, and limit caps their total.
//
// # Bounds
//
// The combinations a cluster's nodes give grow as a power of the numbered groups, so every
// query is bounded (Limits): a query has at most MaxNumberedGroups numbered groups; an
// answer holds at most MaxCandidates (a larger limit, or none, is cut there, and the answer
// says so in Truncated); the search counts its steps and is refused with a *BudgetError once
// they pass WorkBudget, and stops when its context ends. Clusters are searched in rounds
// that hold at most roundCandidates candidates, so memory follows the answer, not the
// combinations. A required trait whose label no cluster reports is an error naming its
// parameter rather than an empty answer.
package allocationcandidates
