// Package machinegroup runs fleetfit-agent's machine-group parts — the node
// pool and machine controllers and the pod resource injector — in-process
// against real managed clusters' API servers, with the spoke's CRDs installed
// as install crds --side spoke installs them (and kube-scheduler,
// kube-controller-manager and kwok where a test needs pods to run), and checks
// what they put on nodes, in the groups' status and in pods, and what the
// MachineGroup CRD's admission refuses.
package machinegroup

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/test/framework"
)

// spoke is the managed cluster shared by the tests of this package; each test
// works with nodes and groups of its own names.
var spoke *framework.ControlPlane

func TestMain(m *testing.M) {
	framework.StopOnSignal()
	cp, err := startSpoke(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the spoke: %v\n", err)
		framework.StopAll()
		os.Exit(1)
	}
	spoke = cp
	code := m.Run()
	framework.StopAll()
	os.Exit(code)
}

func startSpoke(ctx context.Context) (*framework.ControlPlane, error) {
	// OwnerReferencesPermissionEnforcement checks that the controller may
	// block its group's deletion on the MachineNodePool it owns, as clusters
	// that enable the plugin require.
	cp, err := framework.StartControlPlane(ctx, "spoke", framework.Options{
		ExtraAPIServerArgs: []string{"--enable-admission-plugins=OwnerReferencesPermissionEnforcement"},
	})
	if err != nil {
		return nil, err
	}
	crds, err := manifests.SpokeCRDs()
	if err != nil {
		return nil, err
	}
	if err := install.ApplyCRDs(ctx, cp.AdminConfig(), crds); err != nil {
		return nil, fmt.Errorf("installing the spoke CRDs: %w", err)
	}
	return cp, nil
}
