// Package ocm checks that Open Cluster Management's own placement controller
// and work agent, built by `make tools`, run against the test framework's
// fleet: the hub and spoke CRDs fleetfit installs are the ones they need.
package ocm

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 2, framework.Options{}, &fleet)
}
