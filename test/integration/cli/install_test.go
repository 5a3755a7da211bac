// Package cli runs fleetfit's commands against real API servers.
package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/cli"
	"github.com/fleetfit/fleetfit/pkg/cmd/hub"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// TestInstallCRDs installs the hub CRDs on a bare control plane with the
// CLI, as a user would, and checks that the hub then finds every API it
// needs — and that before, it said how to fix their absence. An OCM CRD that
// OCM installed is left as it is.
func TestInstallCRDs(t *testing.T) {
	ctx := t.Context()
	cp, err := framework.StartControlPlane(ctx, "bare-hub", framework.Options{})
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

	// OCM's cluster manager installed its ManagedCluster CRD, of another
	// version than fleetfit's copy.
	crds, err := manifests.HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	const ocmCRD = "managedclusters.cluster.open-cluster-management.io"
	crdClient := apiextensionsclient.NewForConfigOrDie(cp.AdminConfig()).ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if crd.Name == ocmCRD {
			crd = crd.DeepCopy()
			crd.Labels = map[string]string{"installed-by": "ocm"}
			if _, err := crdClient.Create(ctx, crd, metav1.CreateOptions{FieldManager: "cluster-manager"}); err != nil {
				t.Fatal(err)
			}
			if err := install.WaitForCRDs(ctx, cp.AdminConfig(), []*apiextensionsv1.CustomResourceDefinition{crd}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before, err := crdClient.Get(ctx, ocmCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	out, _, err := runFleetfit(t, "install", "crds", "--side", "hub", "--kubeconfig", kubeconfig)
	if err != nil {
		t.Fatalf("fleetfit install crds: %v", err)
	}
	want := []string{"customresourcedefinition.apiextensions.k8s.io/" + ocmCRD + ` unchanged (OCM's own, managed by "cluster-manager")`}
	for _, crd := range crds {
		if crd.Name != ocmCRD {
			want = append(want, "customresourcedefinition.apiextensions.k8s.io/"+crd.Name+" serverside-applied")
		}
	}
	if diff := cmp.Diff(want, lines(out)); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
	after, err := crdClient.Get(ctx, ocmCRD, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || after.Labels["installed-by"] != "ocm" {
		t.Errorf("OCM's CRD %s was changed: resourceVersion %s, then %s; labels %v", ocmCRD, before.ResourceVersion, after.ResourceVersion, after.Labels)
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
