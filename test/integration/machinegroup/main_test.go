// Package machinegroup runs fleetfit-agent's machine-group parts — the node
// pool and machine controllers and the pod resource injector — in-process
// against real managed-cluster API servers, with kube-scheduler,
// kube-controller-manager and kwok running their pods where a test needs them.
package machinegroup

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
