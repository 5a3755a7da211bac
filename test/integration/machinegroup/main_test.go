// Package machinegroup runs fleetfit-agent's machine-group controllers
// in-process against real managed clusters, with kube-scheduler,
// kube-controller-manager and kwok running their pods.
package machinegroup

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) {
	framework.Main(m)
}
