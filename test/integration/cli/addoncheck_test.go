package cli

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/fleetfit/fleetfit/test/framework"
)

// TestAddOnEnableChecksBeforeWriting: `addon enable` asks the hub about every cluster before
// it writes anything, so a cluster whose namespace does not exist stops it with no
// ManagedClusterAddOn created, in the clusters before it either; once the namespace exists,
// every cluster is enabled.
func TestAddOnEnableChecksBeforeWriting(t *testing.T) {
	ctx := t.Context()
	cp, err := framework.StartControlPlane(ctx, "addon-check-hub", framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kubeconfig := kubeconfigFile(t, "hub", cp.AdminConfig())
	if _, _, err := runFleetfit(t, "install", "crds", "--side", "hub", "--kubeconfig", kubeconfig); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runFleetfit(t, "install", "addon", "--kubeconfig", kubeconfig); err != nil {
		t.Fatal(err)
	}
	cc := clusterclient.NewForConfigOrDie(cp.AdminConfig())
	for _, name := range []string{"cluster1", "nons"} {
		if _, err := cc.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createNamespace := func(name string) {
		if _, err := cp.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createNamespace("cluster1")
	addons := addonclient.NewForConfigOrDie(cp.AdminConfig()).AddonV1alpha1()
	enabledIn := func() []string {
		list, err := addons.ManagedClusterAddOns("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		names := []string{}
		for _, a := range list.Items {
			names = append(names, a.Namespace+"/"+a.Name)
		}
		return names
	}

	cases := []struct {
		name        string
		before      func()
		wantErr     string
		wantEnabled []string
	}{
		{
			name:        "a cluster without a namespace: refused, nothing written",
			wantErr:     "nothing was written: cluster nons has no namespace nons on the hub, where its ManagedClusterAddOn lives",
			wantEnabled: []string{},
		},
		{
			name:        "once the namespace exists: both enabled",
			before:      func() { createNamespace("nons") },
			wantEnabled: []string{"cluster1/fleetfit-agent", "nons/fleetfit-agent"},
		},
	}
	for _, tc := range cases {
		if tc.before != nil {
			tc.before()
		}
		_, _, err := runFleetfit(t, "addon", "enable", "--kubeconfig", kubeconfig, "--clusters", "cluster1,nons")
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
		if diff := cmp.Diff(tc.wantEnabled, enabledIn()); diff != "" {
			t.Errorf("%s: ManagedClusterAddOns (-want,+got):\n%s", tc.name, diff)
		}
	}
}
