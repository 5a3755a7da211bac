package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestAddOn installs the fleetfit-agent add-on on a hub with the CLI and
// checks that the API server takes its objects as they are meant; then
// enables and disables it on managed clusters as clusteradm does, and
// checks that the hub keeps each add-on agent to its own cluster's
// namespace.
func TestAddOn(t *testing.T) {
	ctx := t.Context()
	cp, err := framework.StartControlPlane(ctx, "addon-hub", framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kubeconfig := kubeconfigFile(t, "hub", cp.AdminConfig())
	kube := cp.AdminClient()
	addons := addonclient.NewForConfigOrDie(cp.AdminConfig()).AddonV1alpha1()
	const image = "registry.example.com/fleetfit:addon-test"
	enable := func(args ...string) (string, error) {
		out, _, err := runFleetfit(t, append([]string{"addon", "enable", "--kubeconfig", kubeconfig}, args...)...)
		return out, err
	}
	disable := func(args ...string) (string, error) {
		out, _, err := runFleetfit(t, append([]string{"addon", "disable", "--kubeconfig", kubeconfig}, args...)...)
		return out, err
	}
	wantError := func(t *testing.T, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got error %v, want one containing %q", err, want)
		}
	}

	// A cluster that is no OCM hub is refused before anything is written.
	_, err = enable("--clusters", "cluster1")
	wantError(t, err, "not an Open Cluster Management hub")

	if _, _, err := runFleetfit(t, "install", "crds", "--side", "hub", "--kubeconfig", kubeconfig); err != nil {
		t.Fatal(err)
	}
	cc := clusterclient.NewForConfigOrDie(cp.AdminConfig())
	for _, name := range []string{"cluster1", "cluster2"} {
		if _, err := cc.ClusterV1().ManagedClusters().Create(ctx, &clusterv1.ManagedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Without the add-on on the hub, there is nothing to enable.
	_, err = enable("--clusters", "cluster1")
	wantError(t, err, "the hub has no add-on fleetfit-agent")

	// install addon: the API server takes every object, the template with
	// the image and the registration OCM acts on.
	out, _, err := runFleetfit(t, "install", "addon", "--kubeconfig", kubeconfig, "--image", image)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, ref := range addOnObjectRefs {
		want = append(want, ref+" serverside-applied")
	}
	if diff := cmp.Diff(want, lines(out)); diff != "" {
		t.Errorf("install addon output (-want,+got):\n%s", diff)
	}
	tmpl, err := addons.AddOnTemplates().Get(ctx, deployaddon.TemplateName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkStoredTemplate(t, tmpl, image)
	cma, err := addons.ClusterManagementAddOns().Get(ctx, deployaddon.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantConfigs := []addonv1alpha1.ConfigMeta{
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addontemplates"}, DefaultConfig: &addonv1alpha1.ConfigReferent{Name: tmpl.Name}},
		{ConfigGroupResource: addonv1alpha1.ConfigGroupResource{Group: addonv1alpha1.GroupName, Resource: "addondeploymentconfigs"}},
	}
	if diff := cmp.Diff(wantConfigs, cma.Spec.SupportedConfigs); diff != "" {
		t.Errorf("stored supportedConfigs (-want,+got):\n%s", diff)
	}
	if cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyManual {
		t.Errorf("stored install strategy %q, want Manual", cma.Spec.InstallStrategy.Type)
	}

	// Installing again writes nothing.
	objs, err := install.AddOnObjects(install.AddOnOptions{Image: image})
	if err != nil {
		t.Fatal(err)
	}
	before := resourceVersions(t, cp.AdminConfig(), objs)
	if _, _, err := runFleetfit(t, "install", "addon", "--kubeconfig", kubeconfig, "--image", image); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, resourceVersions(t, cp.AdminConfig(), objs)); diff != "" {
		t.Errorf("resourceVersions changed by installing again (-before,+after):\n%s", diff)
	}

	// enable: a ManagedClusterAddOn per cluster, as clusteradm writes it.
	out, err = enable("--clusters", "cluster2,cluster1")
	if err != nil {
		t.Fatal(err)
	}
	wantOut := []string{
		"Deploying fleetfit-agent add-on to managed cluster cluster1 (namespace fleetfit-agent).",
		"Deploying fleetfit-agent add-on to managed cluster cluster2 (namespace fleetfit-agent).",
	}
	if diff := cmp.Diff(wantOut, lines(out)); diff != "" {
		t.Errorf("enable output (-want,+got):\n%s", diff)
	}
	mcaVersions := map[string]string{}
	for _, cluster := range []string{"cluster1", "cluster2"} {
		mca, err := addons.ManagedClusterAddOns(cluster).Get(ctx, deployaddon.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("after enable: %v", err)
		}
		if got := mca.Spec.InstallNamespace; got != install.DefaultAddOnInstallNamespace {
			t.Errorf("%s: spec.installNamespace = %q, want clusteradm's default %q", cluster, got, install.DefaultAddOnInstallNamespace)
		}
		if len(mca.Labels) != 0 || len(mca.Annotations) != 0 || len(mca.Spec.Configs) != 0 {
			t.Errorf("%s: labels %v, annotations %v, configs %v; clusteradm sets none", cluster, mca.Labels, mca.Annotations, mca.Spec.Configs)
		}
		mcaVersions[cluster] = mca.ResourceVersion
	}
	versions := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, cluster := range []string{"cluster1", "cluster2"} {
			mca, err := addons.ManagedClusterAddOns(cluster).Get(ctx, deployaddon.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			out[cluster] = mca.ResourceVersion
		}
		return out
	}

	// Enabling again changes nothing.
	if _, err := enable("--clusters", "cluster1,cluster2"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mcaVersions, versions()); diff != "" {
		t.Errorf("resourceVersions changed by enabling again (-before,+after):\n%s", diff)
	}

	t.Run("bad input", func(t *testing.T) {
		// An unknown cluster stops everything before any write: cluster1
		// would otherwise get the label.
		_, err := enable("--clusters", "cluster1,nowhere,elsewhere", "--labels", "team=a")
		wantError(t, err, `no managed cluster "elsewhere", "nowhere" on the hub`)
		if diff := cmp.Diff(mcaVersions, versions()); diff != "" {
			t.Errorf("an enable that failed wrote (-before,+after):\n%s", diff)
		}
		_, err = disable("--clusters", "nowhere")
		wantError(t, err, `no managed cluster "nowhere" on the hub`)
		for name, tc := range map[string]struct {
			args []string
			want string
		}{
			"no clusters":   {nil, "--clusters is required"},
			"empty cluster": {[]string{"--clusters", "cluster1,"}, "--clusters must not hold an empty name"},
			"bad label":     {[]string{"--clusters", "cluster1", "--labels", "team"}, `label "team": want key=value`},
			"bad namespace": {[]string{"--clusters", "cluster1", "--namespace", ""}, "--namespace must not be empty"},
		} {
			_, err := enable(tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got error %v, want one containing %q", name, err, tc.want)
			}
		}
		if diff := cmp.Diff(mcaVersions, versions()); diff != "" {
			t.Errorf("a refused enable wrote (-before,+after):\n%s", diff)
		}
	})

	// Labels, annotations and the install namespace are set to what is
	// given, and dropped when not given again, as clusteradm does.
	if _, err := enable("--clusters", "cluster1", "--labels", "team=a", "--annotate", "note=x", "-n", "elsewhere"); err != nil {
		t.Fatal(err)
	}
	mca, err := addons.ManagedClusterAddOns("cluster1").Get(ctx, deployaddon.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mca.Labels["team"] != "a" || mca.Annotations["note"] != "x" || mca.Spec.InstallNamespace != "elsewhere" {
		t.Errorf("after enable with labels: labels %v, annotations %v, installNamespace %q", mca.Labels, mca.Annotations, mca.Spec.InstallNamespace)
	}
	if _, err := enable("--clusters", "cluster1"); err != nil {
		t.Fatal(err)
	}
	if mca, err = addons.ManagedClusterAddOns("cluster1").Get(ctx, deployaddon.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(mca.Labels) != 0 || len(mca.Annotations) != 0 || mca.Spec.InstallNamespace != install.DefaultAddOnInstallNamespace {
		t.Errorf("after enable without labels: labels %v, annotations %v, installNamespace %q", mca.Labels, mca.Annotations, mca.Spec.InstallNamespace)
	}

	t.Run("own namespace", func(t *testing.T) { checkAgentsKeepToTheirNamespace(t, cp) })

	// disable: the cluster's ManagedClusterAddOn goes, and only its.
	out, err = disable("--clusters", "cluster1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Undeploying fleetfit-agent add-on in managed cluster cluster1."}, lines(out)); diff != "" {
		t.Errorf("disable output (-want,+got):\n%s", diff)
	}
	if got := slices.Sorted(maps.Keys(versions())); !slices.Equal(got, []string{"cluster2"}) {
		t.Errorf("after disabling cluster1, the add-on is enabled in %v, want [cluster2]", got)
	}
	// Without --clusters, everywhere; a cluster without it is reported.
	out, err = disable()
	if err != nil {
		t.Fatal(err)
	}
	wantOut = []string{
		"fleetfit-agent add-on not found in managed cluster cluster1.",
		"Undeploying fleetfit-agent add-on in managed cluster cluster2.",
	}
	if diff := cmp.Diff(wantOut, lines(out)); diff != "" {
		t.Errorf("disable output (-want,+got):\n%s", diff)
	}
	if got := versions(); len(got) != 0 {
		t.Errorf("after disabling everywhere, the add-on is enabled in %v", got)
	}
}

// checkStoredTemplate checks the AddOnTemplate as the API server stored it:
// the image is set, and OCM will issue a client certificate bound to
// fleetfit:agent in the cluster's namespace.
func checkStoredTemplate(t *testing.T, tmpl *addonv1alpha1.AddOnTemplate, image string) {
	t.Helper()
	if tmpl.Spec.AddonName != deployaddon.Name {
		t.Errorf("stored template is for add-on %q, want %q", tmpl.Spec.AddonName, deployaddon.Name)
	}
	wantRegistration := []addonv1alpha1.RegistrationSpec{{
		Type: addonv1alpha1.RegistrationTypeKubeClient,
		KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{HubPermissions: []addonv1alpha1.HubPermissionConfig{{
			Type:           addonv1alpha1.HubPermissionsBindingCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "fleetfit:agent"},
		}}},
	}}
	if diff := cmp.Diff(wantRegistration, tmpl.Spec.Registration); diff != "" {
		t.Errorf("stored registration (-want,+got):\n%s", diff)
	}
	var images, kinds []string
	for _, m := range tmpl.Spec.AgentSpec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, obj.GetKind())
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			images = append(images, fmt.Sprint(c.(map[string]any)["image"]))
		}
	}
	if !slices.Equal(images, []string{image}) {
		t.Errorf("stored template's images %v, want [%s]", images, image)
	}
	for _, kind := range []string{"Namespace", "ServiceAccount", "ClusterRole", "CustomResourceDefinition", "MutatingWebhookConfiguration", "Deployment"} {
		if !slices.Contains(kinds, kind) {
			t.Errorf("stored template has no %s among %v", kind, kinds)
		}
	}
}

// checkAgentsKeepToTheirNamespace binds fleetfit:agent as OCM's add-on
// manager does — to each cluster's agent user and its groups, one of them
// common to every cluster's agent — and checks that the agent of cluster2
// may write its own score but not cluster1's.
func checkAgentsKeepToTheirNamespace(t *testing.T, cp *framework.ControlPlane) {
	ctx := t.Context()
	kube := cp.AdminClient()
	user := func(cluster string) string {
		return "system:open-cluster-management:cluster:" + cluster + ":addon:fleetfit-agent:agent:fleetfit-agent-agent"
	}
	groups := func(cluster string) []string {
		return []string{"system:open-cluster-management:cluster:" + cluster + ":addon:fleetfit-agent", "system:open-cluster-management:addon:fleetfit-agent"}
	}
	for _, cluster := range []string{"cluster1", "cluster2"} {
		subjects := []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user(cluster)}}
		for _, g := range groups(cluster) {
			subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: g})
		}
		if _, err := kube.RbacV1().RoleBindings(cluster).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "open-cluster-management:fleetfit-agent:clusterrole:agent"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "fleetfit:agent"},
			Subjects:   subjects,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := cp.UserConfig(user("cluster2"), groups("cluster2")...)
	if err != nil {
		t.Fatal(err)
	}
	scores := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1alpha1", Resource: "addonplacementscores"})
	score := func(ns string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.open-cluster-management.io/v1alpha1",
			"kind":       "AddOnPlacementScore",
			"metadata":   map[string]any{"name": "fleetfit-resources", "namespace": ns},
		}}
	}
	// The policy takes effect once the API server has loaded it.
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := scores.Namespace("cluster1").Create(ctx, score("cluster1"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return fmt.Errorf("cluster2's agent may write in cluster1's namespace")
		}
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "writes only in its own cluster namespace") {
			return fmt.Errorf("cluster2's agent writing in cluster1's namespace: got %v, want the policy's refusal", err)
		}
		return nil
	})
	if _, err := scores.Namespace("cluster2").Create(ctx, score("cluster2"), metav1.CreateOptions{}); err != nil {
		t.Errorf("cluster2's agent writing its own score: %v", err)
	}
}
