// Package hubauth runs fleetfit-hub in-process, as its ServiceAccount with deploy/hub's RBAC
// and its HTTPS endpoint served, against a real hub API server, and checks that every
// endpoint answers as one door: 401 to a caller without credentials or with credentials the
// hub API server refuses, 403 naming the verb and resource (or path) to a caller without the
// right, both as a metav1.Status, and the answer itself to a caller with it.
package hubauth

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is the hub; there are no spokes.
var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 0, framework.Options{}, &fleet)
}
