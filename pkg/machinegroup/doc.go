// Package machinegroup holds what the spoke's machine-group controllers, its
// pod resource injector and the hub agree on about MachineGroups: the labels,
// annotation and taints (Imperator's design's, under the prefix machines.fleetfit.io/),
// the names of the reservation objects, what a pod of a machine type must
// carry (requests = limits, node affinity, tolerations), and how a pod's
// state counts in a machine type's usage.
//
// It is pure: no clients, no informers. The controllers under
// pkg/agent/machinegroup act on what it computes.
package machinegroup
