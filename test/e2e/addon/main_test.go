// Package addon runs fleetfit's agent end to end the way an Open Cluster Management user
// installs it: a hub and two managed clusters (etcd + kube-apiserver each) joined with OCM's own
// registration (hub controller, CSR signer, a registration agent per cluster, accepted as
// clusteradm accepts them), OCM's add-on manager and work agents, and the agent installed only
// through its add-on (`fleetfit install addon`, `fleetfit addon enable`), running with the
// credentials OCM's registration agent issued and keeps rotating. Every cluster also runs
// kube-controller-manager, kube-scheduler and kwok; the hub runs bin/fleetfit-hub beside OCM's
// placement controller. It needs `make build` and `make tools`.
package addon

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is the hub and the two managed clusters, cluster1 and cluster2.
var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 2, framework.Options{ServiceAccountAdmission: true}, &fleet)
}
