// Package faults proves that faults never cost a running workload: a hub killed in the
// middle of a burst, agents that fall silent, an API server that stops answering, a hub
// restarted while every inventory is old and a leader handover may delay new decisions, but
// never remove a decision or a delivered ManifestWork, nor promise the same capacity twice.
//
// Everything runs as processes: a hub and three spokes (etcd + kube-apiserver each),
// bin/fleetfit-hub and one bin/fleetfit-agent per spoke. The spokes' nodes are created once;
// each test starts its own agents and hubs in its own namespace and cleans up after itself, so
// that no reservation, decision or ManifestWork of one test reaches the next. No work agent
// runs: ManifestWorks are counted on the hub, where the action controller writes them.
package faults

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is the hub and the spokes, registered as cluster1..cluster3 by setUpFleet.
var fleet *framework.Fleet

// spokes is the number of managed clusters.
const spokes = 3

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, spokes, framework.Options{}, &fleet)
}
