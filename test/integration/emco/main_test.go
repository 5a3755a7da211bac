// Package emco runs fleetfit-hub in-process, as its ServiceAccount with deploy/hub's RBAC and
// its HTTPS endpoint served, against a real hub API server, and speaks EMCO's HPA intent API
// to it over HTTPS as EMCO's clients do: EMCO's usage example replayed, every status code,
// and concurrent requests.
package emco

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
