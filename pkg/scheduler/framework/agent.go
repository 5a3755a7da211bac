package framework

import (
	"fmt"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
)

// AgentAddOnLabel is the label OCM's add-on manager keeps on a ManagedCluster where the
// fleetfit-agent add-on is enabled, with the add-on's health as its value: AddOnAvailable,
// AddOnUnhealthy or AddOnUnreachable. Clusters whose agent was installed without the add-on
// (fleetfit install agent) do not have it; their ClusterInventory is the only sign of an agent.
const AgentAddOnLabel = "feature.open-cluster-management.io/addon-fleetfit-agent"

// The values of AgentAddOnLabel.
const (
	AddOnAvailable   = "available"
	AddOnUnhealthy   = "unhealthy"
	AddOnUnreachable = "unreachable"
)

// AgentAddOn returns the fleetfit-agent add-on's health on the cluster, as OCM labels it, and
// whether the add-on is enabled there at all.
func AgentAddOn(c *clusterv1.ManagedCluster) (health string, enabled bool) {
	if c == nil {
		return "", false
	}
	health, enabled = c.Labels[AgentAddOnLabel]
	return health, enabled
}

// noInventory is why a cluster without a ClusterInventory is not chosen: no agent at all, or
// an add-on whose agent has not reported (yet).
func (c *ClusterInfo) noInventory() string {
	health, enabled := AgentAddOn(c.Cluster)
	if !enabled {
		if c.NoInventoryReason != "" {
			return c.NoInventoryReason
		}
		return NoInventory
	}
	if health == AddOnAvailable {
		return "the fleetfit-agent add-on is available but no ClusterInventory has arrived yet: not chosen until the agent reports"
	}
	return fmt.Sprintf("the fleetfit-agent add-on is %s and no ClusterInventory has arrived: check the agent on the cluster (kubectl get managedclusteraddon fleetfit-agent -n %s)", addOnHealth(health), c.Name())
}

// staleAddOn adds to a stale inventory's reason what OCM says of the add-on's health, when
// that explains the silence.
func (c *ClusterInfo) staleAddOn() string {
	health, enabled := AgentAddOn(c.Cluster)
	if !enabled || health == AddOnAvailable {
		return ""
	}
	return fmt.Sprintf("; OCM reports the fleetfit-agent add-on %s", addOnHealth(health))
}

func addOnHealth(h string) string {
	if h == "" {
		return "of unknown health"
	}
	return h
}
