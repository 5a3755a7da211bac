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
// A new kind of requirement touches four places and no other:
//
//  1. The API type and its validation: a field of ResourceRequirement in
//     pkg/apis/fleetfit/v1alpha1, its CRD markers and CEL rules, and the same
//     rules in pkg/apis/fleetfit/v1alpha1/validation (for clients that skip
//     admission, such as fleet files).
//  2. This package: resolve the field into Consumer (mandatory) or
//     OptionalRequirement (optional), and make Compile put it into the
//     consumer's and its pod's inventory.Request (podRequest sums or joins
//     it over the pod's containers).
//  3. pkg/inventory: what the Request asks of a node, so that View and
//     Allocation answer fit questions with it, never over-estimating a
//     cluster.
//  4. pkg/mutation: what the delivered pod template gets so that the spoke's
//     scheduler puts the pods where the hub found room.
//
// The scheduler, its plugins and the controllers read only Intent (its Pods)
// and inventory.Request, so they need no change, with one exception for a
// kind that is not an amount on a node: a reservation is seen through the
// cluster's requested totals, so such a kind adds a pseudo resource to
// Consumer.Amounts (and so Pod.Amounts) and framework.RequestedTotals, as
// machine types do (inventory.MachineResourceName, counted from the types'
// usage.used), and HardwareFit words its shortage
// (framework.ClusterInfo.FitsHardware).
package hpa
