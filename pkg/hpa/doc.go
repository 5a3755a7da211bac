// Package hpa turns an HPAIntent into the one form the rest of the hub works
// with. HPA means hardware platform awareness: an HPAIntent says what hardware
// the pods of a workload need (amounts of resources and node features), not
// how many pods to run.
//
// Resolve reads an intent: per consumer, the replica count, the per-replica
// mandatory requests in Kubernetes units, the mandatory node features as
// NodeSelectorRequirements and the optional requirements with their weights.
// It is the one place that knows EMCO's shorthands (legacy units, feature
// value), so nothing downstream has to. It also checks what the CRD cannot:
// that the consumers fit the workload manifests the intent carries. Every
// problem it reports says what to change.
//
// # Pods
//
// Consumers whose targets name the same workload object (apiVersion, kind and
// name) are containers of one pod template, so Resolve groups them into a
// Pod: each replica of it is one Kubernetes pod and needs one node with the
// sum of their mandatory amounts free and all their features at once
// (OpenStack's numbered request group: one provider). Fitting the consumers
// one by one would take a cluster of two half-size nodes for a pod that fits
// neither. Resolve refuses a pod whose consumers' replicas disagree (they
// come from one object), and one whose machine-type consumer, mandatory or
// optional, stands beside a consumer with amounts or another machine type:
// the machine gives its container the type's resources and leaves no known
// room on the node for more, and over-estimating a cluster is the one thing
// a fit query must not do. Features-only consumers may share a machine's pod;
// their features then apply to the machine's node.
//
// Fit checks, scores and reservations read Pods; Consumer.Request, the
// container as if alone, is kept for what works per container. An optional
// requirement's Request is the whole pod with it met, so Consumer.MeetsOptional
// answers for the pod, and delivery, which applies what it meets container by
// container, never promises more than the scheduler checked.
//
// Compile resolves an intent and adds each consumer's and each pod's fit
// queries (inventory.Request, for the mandatory requirements and for each
// optional one). Its result, Intent, is the compiled form of one generation of an
// intent, as Kueue's workload.Info is of a Workload: the scheduler's cache
// compiles each stored intent once per UID and generation, and the
// HardwareFit plugin, the reservations and the candidates in the intent's
// status (the placement controller) and the delivery (the action controller)
// all read that same value.
//
// # Adding a requirement kind
//
// A kind that is an amount or a label on a node, as resources and features
// are, touches four places:
//
//  1. The API type and its validation: a field of ResourceRequirement in
//     pkg/apis/fleetfit/v1alpha1 (hpaintent_types.go), its CRD markers and CEL
//     rules, the same rules in pkg/apis/fleetfit/v1alpha1/validation
//     (requirement.go, for clients that skip admission, such as fleet files),
//     and make generate (deepcopy, manifests/crds/hub).
//  2. This package: resolve the field into Consumer (mandatory) or
//     OptionalRequirement (optional) in resolve.go; say in pod.go which other
//     kinds may share a pod with it; make Compile (compile.go) put it into the
//     consumer's and its pod's inventory.Request (podRequest sums or joins it
//     over the pod's containers); and check it against the workload's
//     manifests in workload.go when it constrains them.
//  3. pkg/inventory: what the Request asks of a node, so that View and
//     Allocation answer fit questions with it, never over-estimating a
//     cluster.
//  4. pkg/mutation (consumer.go): what the delivered pod template gets so
//     that the spoke's scheduler puts the pods where the hub found room.
//
// The scheduler, its plugins and the controllers read only Intent (its Pods)
// and inventory.Request, so for such a kind they need no change.
//
// A kind that is not an amount on a node touches more; machine types, the
// one such kind so far, touched each of these (besides the four above and the
// spoke's own MachineGroup controllers):
//
//   - What the cluster reports: a field of ClusterInventoryStatus
//     (clusterinventory_types.go), the agent that fills it (pkg/agent/reporter)
//     and pkg/inventory reading it (machines.go beside view.go and
//     allocation.go).
//   - Reservations: a reservation is seen through the cluster's requested
//     totals, so the kind adds a pseudo resource to Consumer.Amounts (and so
//     Pod.Amounts) and to framework.RequestedTotals (reservation.go), as
//     machine types do (inventory.MachineResourceName, counted from the
//     types' usage.used), and pkg/controller/placement (reservations.go)
//     records it in a restored reservation's base.
//   - Reasons: framework.ClusterInfo.FitsHardware (hardware.go) words the
//     shortage and says whether a decided cluster still offers the kind; the
//     HardwareFit plugin passes that on.
//   - Delivery beyond the pod template: pkg/controller/action
//     (desiredwork.go) opts the namespace of a machine type's guests in to
//     the spoke's injector, asking Consumer.MachineGuest.
//   - What users read: pkg/cli/getcmd (a column of get clusters and get
//     machinetypes) and pkg/simulate (fleet files that carry what the
//     cluster reports).
//   - Test builders in pkg/util/testing (MakeMachineTypeRequirement and the
//     reported types and groups).
package hpa
