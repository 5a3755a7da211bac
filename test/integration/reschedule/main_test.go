// Package reschedule runs fleetfit-hub in-process, as its ServiceAccount with deploy/hub's
// RBAC, against a real hub API server, and checks that an HPAIntent's workload moves away
// from a decided cluster whose agent reports its pods unschedulable past the intent's
// threshold: the move in the intent's status, the Placement's new decision, the condition
// and the event; and that nothing moves with the policy Never or with no other cluster
// that can take the workload.
package reschedule

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is the hub. There are no spokes: the managed clusters are API objects and their
// ClusterInventories are written directly, as their agents would write them.
var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 0, framework.Options{}, &fleet)
}
