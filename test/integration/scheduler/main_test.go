// Package scheduler runs fleetfit-hub's placement controller in-process against a real hub
// API server and checks Placements, PlacementDecisions and status as OCM documents them.
// Each test works in its own namespace with its own clusters in its own cluster set, and
// starts and stops its own hub, so tests never see each other's decisions.
package scheduler

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is the hub (no spokes: the scheduler reads only hub objects).
var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 0, framework.Options{}, &fleet)
}
