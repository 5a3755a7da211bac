// Package cli runs fleetfit's commands against real API servers.
package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

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
	kubeconfig := kubeconfigFile(t, "hub", cp.AdminConfig())
	dc := discovery.NewDiscoveryClientForConfigOrDie(cp.AdminConfig())

	err = hub.RequireAPIs(cp.URL(), dc)
	if err == nil || !strings.Contains(err.Error(), "fleetfit install crds --side hub") {
		t.Fatalf("before install: got %v, want an error that says to run `fleetfit install crds --side hub`", err)
	}

	out, _, err := runFleetfit(t, "install", "crds", "--side", "hub", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("fleetfit install crds: %v", err)
	}
	crds, err := manifests.HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range crds {
		if !strings.Contains(out, "customresourcedefinition.apiextensions.k8s.io/"+crd.Name+" serverside-applied\n") {
			t.Errorf("output does not report %s applied:\n%s", crd.Name, out)
		}
	}
	// Discovery is cached per client; use a fresh one.
	dc = discovery.NewDiscoveryClientForConfigOrDie(cp.AdminConfig())
	if err := hub.RequireAPIs(cp.URL(), dc); err != nil {
		t.Errorf("after install: %v", err)
	}

	// Installing again is harmless: it updates in place.
	if _, _, err := runFleetfit(t, "install", "crds", "--side", "hub", "--kubeconfig", kubeconfig); err != nil {
		t.Errorf("second fleetfit install crds: %v", err)
	}
}

// runFleetfit runs the fleetfit command line, as a user would, with a fresh
// root command, and returns what it printed.
func runFleetfit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := cli.NewCommand()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = root.ExecuteContext(t.Context())
	t.Logf("fleetfit %s\n%s%s(error: %v)", strings.Join(args, " "), out.String(), errOut.String(), err)
	return out.String(), errOut.String(), err
}

// kubeconfigFile writes cfg as a kubeconfig file and returns its path.
func kubeconfigFile(t *testing.T, name string, cfg *rest.Config) string {
	t.Helper()
	raw, err := framework.Kubeconfig(cfg, name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
