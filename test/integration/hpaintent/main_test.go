// Package hpaintent runs fleetfit's HPAIntent validation controller in-process
// against a real hub API server and checks the Valid condition and the events
// a user sees. Each test works in its own namespace with its own controller.
package hpaintent

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// fleet is the hub (no spokes: validation reads only hub objects).
var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 0, framework.Options{}, &fleet)
}
