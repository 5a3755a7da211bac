package framework

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestAgentReasons: a cluster without an inventory is one without a fleetfit agent, unless
// the add-on label says the add-on is enabled there; a stale inventory is worded as such, with
// the add-on's health when OCM reports it unwell.
func TestAgentReasons(t *testing.T) {
	node := st.MakeNode("n").Resource(corev1.ResourceCPU, "8").Obj()
	for _, tc := range []struct {
		name     string
		addOn    string // the label's value; "-" for no label
		observed time.Duration
		noReport bool
		want     string
	}{{
		name: "no agent", addOn: "-", noReport: true,
		want: NoInventory,
	}, {
		name: "add-on available, no report yet", addOn: AddOnAvailable, noReport: true,
		want: "the fleetfit-agent add-on is available but no ClusterInventory has arrived yet: not chosen until the agent reports",
	}, {
		name: "add-on unreachable, no report", addOn: AddOnUnreachable, noReport: true,
		want: "the fleetfit-agent add-on is unreachable and no ClusterInventory has arrived: check the agent on the cluster (kubectl get managedclusteraddon fleetfit-agent -n c1)",
	}, {
		name: "add-on label without a value", addOn: "", noReport: true,
		want: "the fleetfit-agent add-on is of unknown health and no ClusterInventory has arrived: check the agent on the cluster (kubectl get managedclusteraddon fleetfit-agent -n c1)",
	}, {
		name: "stale, agent installed without the add-on", addOn: "-", observed: time.Hour,
		want: "the ClusterInventory is 1h0m0s old (more than 10m0s): not chosen anew until the fleetfit agent reports again (is it running, and can it reach the hub?)",
	}, {
		name: "stale, add-on available", addOn: AddOnAvailable, observed: time.Hour,
		want: "the ClusterInventory is 1h0m0s old (more than 10m0s): not chosen anew until the fleetfit agent reports again (is it running, and can it reach the hub?)",
	}, {
		name: "stale, add-on unhealthy", addOn: AddOnUnhealthy, observed: time.Hour,
		want: "the ClusterInventory is 1h0m0s old (more than 10m0s): not chosen anew until the fleetfit agent reports again (is it running, and can it reach the hub?); OCM reports the fleetfit-agent add-on unhealthy",
	}, {
		name: "fresh, add-on unreachable: the report counts", addOn: AddOnUnreachable, observed: time.Minute,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := st.MakeCluster("c1")
			if tc.addOn != "-" {
				cluster.Label(AgentAddOnLabel, tc.addOn)
			}
			info := NewClusterInfo(cluster.Obj(), nil, nil)
			if !tc.noReport {
				info = NewClusterInfo(cluster.Obj(), nil, st.MakeInventory("c1", now.Add(-tc.observed), []*corev1.Node{node}))
			}
			fresh, why := info.fresh(now)
			if fresh != (tc.want == "") || why != tc.want {
				t.Errorf("fresh = %v, %q; want %v, %q", fresh, why, tc.want == "", tc.want)
			}
		})
	}
}
