// Package agent holds the RBAC that fleetfit-agent needs, on the managed
// cluster and on the hub, for the installer and the tests to apply.
package agent

import (
	_ "embed"
	"strings"
)

// SpokeRBAC lets the agent's ServiceAccount read Nodes and Pods.
//
//go:embed spoke-rbac.yaml
var SpokeRBAC []byte

// HubRBAC is the hub ClusterRole fleetfit:agent, bound per cluster by
// HubClusterRBAC.
//
//go:embed hub-rbac.yaml
var HubRBAC []byte

//go:embed hub-cluster-rbac.yaml
var hubClusterRBAC string

// AgentUser is the hub identity of the agent of cluster.
func AgentUser(cluster string) string { return "system:fleetfit:agent:" + cluster }

// HubClusterRBAC binds HubRBAC for one cluster's agent in that cluster's
// namespace, and lets it patch its own ManagedCluster's status.
func HubClusterRBAC(cluster string) []byte {
	return []byte(strings.ReplaceAll(hubClusterRBAC, "CLUSTER_NAME", cluster))
}
