// Package e2e runs fleetfit end to end on a real fleet, every piece a process: a hub and two
// managed clusters (etcd + kube-apiserver each); on every managed cluster kube-controller-manager,
// kube-scheduler, kwok playing kubelet for nodes with GPUs, OCM's own work agent and
// bin/fleetfit-agent; on the hub bin/fleetfit-hub. It needs `make build` and `make tools`.
package e2e

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
