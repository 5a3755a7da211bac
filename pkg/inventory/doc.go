// Package inventory is fleetfit's single implementation of node fit and
// cluster inventory, shared by the spoke agent, the hub scheduler, the CLI
// and the tests.
//
// On the spoke, a Cluster follows Nodes and Pods and computes, per node,
// capacity, allocatable, requested (pods bound to the node and not
// terminated, counted as kube-scheduler counts them, plus one pod slot each)
// and free = allocatable − requested, never below zero. Summarize groups
// nodes into shapes (same schedulability, taints, feature labels and
// allocatable) and reports, per shape, the distinct free vectors of its
// nodes with how many nodes have each.
//
// On the hub, a View answers, from that report alone, whether one node can
// take a Request, how many replicas fit, and the most of one resource free on
// a single usable node.
//
// A report says which node labels it covers (reportedLabels: the agent's
// prefixes and the keys the hub asked for). A View never decides a feature
// requirement on a label outside them: the label's absence from the report
// says nothing about the nodes, so such a Request fits no node there, and
// Unreported says which label is missing (see reported.go).
//
// # Accuracy
//
// The report never over-claims. Each reported free vector with count n is
// matched by n distinct real nodes of that shape, each having at least that
// much of every resource free, because:
//   - each node's free amounts are rounded down to the configured step
//     (Config.RoundingSteps), which can only lower them; and
//   - when a shape has more distinct vectors than its cap (see
//     Config.MaxFreeVectorsPerShape and Config.MaxFreeVectors), vectors are
//     merged into groups reported as their component-wise
//     minimum with the group's node count, and the shape is marked
//     Truncated.
//
// Hence View.FitsOnOneNode never says yes when no node fits, and
// View.MaxReplicas never exceeds what the nodes can take with replicas packed
// per node and no amount split across nodes. When no usable shape is
// truncated, MaxReplicas is exact for the rounded free amounts, which
// View.MaxReplicas reports; it is then also exact for the real nodes when
// every requested amount is a multiple of its rounding step. Otherwise
// rounding loses less than one step per resource per node, and truncation
// loses what the merged nodes had above their group's minimum.
//
// # Machine types
//
// A report also lists the cluster's MachineGroups with, per machine type,
// how many machines are free: usage.reserved, running reservation pods no
// guest has taken. A machine request (NewMachineRequest) takes one of them per
// replica and no node capacity, since the reservation pod already holds it
// and the guest takes its place. An Allocation counts the machines it has
// given out per type, so that replicas placed together never take the same
// machine twice. The report does not say on which nodes the free machines are,
// so a machine request's features are checked against the schedulable nodes
// as a whole (see View.FreeMachines): exact for types bound to node pools of
// one kind, optimistic for a type whose free machines sit on nodes without
// the features while other nodes have them.
//
// # Unschedulable pods
//
// A report also says, per HPAIntent, how many of the pods fleetfit delivered
// kube-scheduler could not place, since when and why (SummarizeUnschedulable):
// what the hub needs to tell a decision that failed on the cluster from one
// that runs. It reads only pods that carry the intent labels and have no node,
// is bounded in entries and message length, and depends only on the pods, not
// on the order they were seen, so an unchanged cluster reports it unchanged.
// It takes no part in fit: a View never reads it.
//
// The report's size depends on the number of shapes (each with a bounded
// number of vectors), not on the number of nodes. It was computed at one
// instant: pods scheduled since then are not in it, which the
// hub accounts for separately.
package inventory
