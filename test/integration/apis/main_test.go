// Package apis checks, against real API servers, what fleetfit's CRDs admit
// and refuse, and what a restricted identity may write.
package apis

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is one hub and two spokes shared by the tests of this package; each
// test works in namespaces of its own.
var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 2, framework.Options{}, &fleet)
}
