// Package cli runs fleetfit's commands against real API servers.
package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/cli"
	"github.com/fleetfit/fleetfit/pkg/cmd/hub"
	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// TestInstallCRDs installs the hub CRDs on a bare control plane with the
// CLI, as a user would, and checks that the hub then finds every API it
// needs — and that before, it said how to fix their absence.
func TestInstallCRDs(t *testing.T) {
	cp, err := framework.StartControlPlane(t.Context(), "bare-hub", framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kubeconfig := filepath.Join(t.TempDir(), "hub.kubeconfig")
	raw, err := framework.Kubeconfig(cp.AdminConfig(), "hub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	dc := discovery.NewDiscoveryClientForConfigOrDie(cp.AdminConfig())

	err = hub.RequireAPIs(cp.URL(), dc)
	if err == nil || !strings.Contains(err.Error(), "fleetfit install crds --side hub") {
		t.Fatalf("before install: got %v, want an error that says to run `fleetfit install crds --side hub`", err)
	}

	var out bytes.Buffer
	root := cli.NewCommand()
	root.SetOut(&out)
	root.SetArgs([]string{"install", "crds", "--side", "hub", "--kubeconfig", kubeconfig})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("fleetfit install crds: %v", err)
	}
	crds, err := manifests.HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if !strings.Contains(out.String(), crd.Name+" applied") {
			t.Errorf("output does not report %s applied:\n%s", crd.Name, out.String())
		}
	}
	// Discovery is cached per client; use a fresh one.
	dc = discovery.NewDiscoveryClientForConfigOrDie(cp.AdminConfig())
	if err := hub.RequireAPIs(cp.URL(), dc); err != nil {
		t.Errorf("after install: %v", err)
	}

	// Installing again is harmless: it updates in place.
	root.SetArgs([]string{"install", "crds", "--side", "hub", "--kubeconfig", kubeconfig})
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Errorf("second fleetfit install crds: %v", err)
	}
}
