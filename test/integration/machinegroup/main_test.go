// Package machinegroup runs the machine-group parts of fleetfit-agent
// in-process against real managed-cluster API servers.
package machinegroup

import (
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }
