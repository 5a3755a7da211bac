// Package ui drives fleetfit's web page (`fleetfit ui`) in headless Chromium against a real
// fleet, every piece a process: a hub and two managed clusters laid out as the first two
// clusters of `make demo` (kwok nodes with A100 and T4 GPUs, pods already running), with
// kube-controller-manager, kube-scheduler, kwok, OCM's work agent and bin/fleetfit-agent on
// each managed cluster, bin/fleetfit-hub on the hub, and bin/fleetfit ui serving the page
// with a user's kubeconfig. It needs `make build`, `make tools` and Debian's chromium.
package ui

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is the hub and the two managed clusters, cluster1 and cluster2.
var fleet *framework.Fleet

func TestMain(m *testing.M) {
	// Pods get their ServiceAccount as in a real cluster: kube-controller-manager runs.
	framework.MainWithFleet(m, 2, framework.Options{ServiceAccountAdmission: true}, &fleet)
}
