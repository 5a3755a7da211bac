// Package agent runs fleetfit-agent's reporter in-process against real
// control planes — a hub and two managed clusters — with the identities and
// RBAC of deploy/agent, and checks what arrives on the hub.
package agent

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is one hub and two spokes shared by the tests of this package.
var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 2, framework.Options{}, &fleet)
}
