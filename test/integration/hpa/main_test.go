// Package hpa checks HPAIntent scheduling end to end on a real fleet: a hub and three spokes,
// each a real API server, with nodes (and pods bound to them) on the spokes, the fleetfit
// agent reporting each spoke's ClusterInventory to the hub, and fleetfit-hub deciding
// Placements by their intents' hardware requirements.
//
// The spokes are shared: each test creates its own nodes on the spokes it uses, waits until
// their inventories show exactly those nodes, restricts its Placements to those clusters,
// and deletes its nodes again at its end. Each test starts its own hub in its own namespace,
// so reservations and decisions never leak from one test into the next.
package hpa

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is the hub and three spokes, registered as cluster1..cluster3 by startAgents.
var fleet *framework.Fleet

// spokes is the number of spokes of the fleet.
const spokes = 3

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, spokes, framework.Options{}, &fleet)
}
