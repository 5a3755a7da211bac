package cli

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	deployhub "github.com/fleetfit/fleetfit/deploy/hub"
	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/cmd/hub"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
	"github.com/fleetfit/fleetfit/test/framework"
)

// hubObjectRefs are deploy/hub's objects, in the order `install hub` applies
// and prints them.
var hubObjectRefs = []string{
	"namespace/fleetfit-system",
	"serviceaccount/fleetfit-hub",
	"clusterrole.rbac.authorization.k8s.io/fleetfit:hub",
	"clusterrolebinding.rbac.authorization.k8s.io/fleetfit:hub",
	"clusterrolebinding.rbac.authorization.k8s.io/fleetfit:hub:auth-delegator",
	"rolebinding.rbac.authorization.k8s.io/fleetfit:hub:authentication-reader",
	"role.rbac.authorization.k8s.io/fleetfit:hub:leader-election",
	"rolebinding.rbac.authorization.k8s.io/fleetfit:hub:leader-election",
	"clusterrole.rbac.authorization.k8s.io/fleetfit:hub:metrics-reader",
	"flowschema.flowcontrol.apiserver.k8s.io/fleetfit-hub",
	"validatingadmissionpolicy.admissionregistration.k8s.io/fleetfit-ocm-int32-ranges",
	"validatingadmissionpolicybinding.admissionregistration.k8s.io/fleetfit-ocm-int32-ranges",
	"deployment.apps/fleetfit-hub",
	"service/fleetfit-hub",
}

// addOnObjectRefs are deploy/addon's objects, which `install hub` applies
// after deploy/hub's, and `install addon` alone.
var addOnObjectRefs = []string{
	"clusterrole.rbac.authorization.k8s.io/fleetfit:agent",
	"validatingadmissionpolicy.admissionregistration.k8s.io/fleetfit-agent-own-namespace",
	"validatingadmissionpolicybinding.admissionregistration.k8s.io/fleetfit-agent-own-namespace",
	"addontemplate.addon.open-cluster-management.io/fleetfit-agent",
	"clustermanagementaddon.addon.open-cluster-management.io/fleetfit-agent",
}

// TestInstallHub installs fleetfit-hub on a bare control plane with the CLI:
// a dry run first, which leaves the cluster as it was, then for real, then
// again, which changes nothing; then it takes back what another field manager
// changed only when told to.
func TestInstallHub(t *testing.T) {
	ctx := t.Context()
	cp, err := framework.StartControlPlane(ctx, "install-hub", framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kubeconfig := kubeconfigFile(t, "hub", cp.AdminConfig())
	kube := cp.AdminClient()
	const image = "registry.example.com/fleetfit:test"
	installHub := []string{"install", "hub", "--kubeconfig", kubeconfig, "--image", image, "--placements", "annotated"}

	t.Run("bad flags", func(t *testing.T) {
		for name, tc := range map[string]struct {
			args []string
			want string
		}{
			"placements": {args: []string{"--placements", "some"}, want: `--placements must be "all" or "annotated", not "some"`},
			"image":      {args: []string{"--image", ""}, want: "--image: the image must not be empty"},
		} {
			t.Run(name, func(t *testing.T) {
				_, _, err := runFleetfit(t, append(slices.Clone(installHub), tc.args...)...)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("got error %v, want one containing %q", err, tc.want)
				}
			})
		}
	})

	t.Run("dry run", func(t *testing.T) {
		out, _, err := runFleetfit(t, append(slices.Clone(installHub), "--dry-run")...)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, ref := range crdRefs(t, manifests.HubCRDs) {
			want = append(want, ref+" serverside-applied (server dry run)")
		}
		for _, ref := range hubObjectRefs {
			line := ref + " serverside-applied (server dry run)"
			if strings.HasSuffix(ref, ":hub:authentication-reader") || !inHubNamespace(ref) {
				want = append(want, line)
				continue
			}
			want = append(want, ref+" serverside-applied (dry run, not sent to the server: namespace fleetfit-system does not exist yet)")
		}
		// The add-on's own kinds are served once the dry run's CRDs are
		// installed for real.
		for _, ref := range addOnObjectRefs {
			switch kind, _, _ := strings.Cut(ref, "/"); kind {
			case "addontemplate.addon.open-cluster-management.io":
				want = append(want, ref+" serverside-applied (dry run, not sent to the server: the cluster does not serve AddOnTemplate.addon.open-cluster-management.io yet)")
			case "clustermanagementaddon.addon.open-cluster-management.io":
				want = append(want, ref+" serverside-applied (dry run, not sent to the server: the cluster does not serve ClusterManagementAddOn.addon.open-cluster-management.io yet)")
			default:
				want = append(want, ref+" serverside-applied (server dry run)")
			}
		}
		if diff := cmp.Diff(want, lines(out)); diff != "" {
			t.Errorf("output (-want,+got):\n%s", diff)
		}
		if _, err := kube.CoreV1().Namespaces().Get(ctx, deployhub.Namespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s after a dry run: got error %v, want NotFound", deployhub.Namespace, err)
		}
		if err := hub.RequireAPIs(cp.URL(), discovery.NewDiscoveryClientForConfigOrDie(cp.AdminConfig())); err == nil {
			t.Errorf("the hub's APIs are served after a dry run")
		}
	})

	out, stderr, err := runFleetfit(t, installHub...)
	if err != nil {
		t.Fatalf("fleetfit install hub: %v", err)
	}
	var want []string
	for _, ref := range slices.Concat(crdRefs(t, manifests.HubCRDs), hubObjectRefs, addOnObjectRefs) {
		want = append(want, ref+" serverside-applied")
	}
	if diff := cmp.Diff(want, lines(out)); diff != "" {
		t.Errorf("output (-want,+got):\n%s", diff)
	}
	if strings.Contains(stderr, "scale OCM's placement controller") {
		t.Errorf("--placements annotated, yet told to scale OCM's placement controller down:\n%s", stderr)
	}
	if err := hub.RequireAPIs(cp.URL(), discovery.NewDiscoveryClientForConfigOrDie(cp.AdminConfig())); err != nil {
		t.Errorf("after install: %v", err)
	}

	d, err := kube.AppsV1().Deployments(deployhub.Namespace).Get(ctx, deployhub.DeploymentName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type container struct {
		Name, Image string
		Args        []string
	}
	gotContainers := []container{}
	for _, c := range d.Spec.Template.Spec.Containers {
		gotContainers = append(gotContainers, container{c.Name, c.Image, c.Args})
	}
	wantContainers := []container{{"fleetfit-hub", image, []string{"--placements=annotated", "--secure-port=9443", "--cert-dir=/tmp/serving-certs"}}}
	if diff := cmp.Diff(wantContainers, gotContainers); diff != "" {
		t.Errorf("containers of the Deployment (-want,+got):\n%s", diff)
	}
	if got := d.Spec.Template.Spec.ServiceAccountName; got != "fleetfit-hub" {
		t.Errorf("serviceAccountName = %q, want fleetfit-hub", got)
	}

	// The RBAC grants fleetfit-hub's ServiceAccount what it schedules with.
	sa := deployhub.ServiceAccountUser
	for name, tc := range map[string]struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		"watch placements":           {authorizationv1.ResourceAttributes{Verb: "watch", Group: "cluster.open-cluster-management.io", Resource: "placements"}, true},
		"create placementdecisions":  {authorizationv1.ResourceAttributes{Verb: "create", Group: "cluster.open-cluster-management.io", Resource: "placementdecisions", Namespace: "default"}, true},
		"update leases":              {authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: deployhub.Namespace}, true},
		"update leases elsewhere":    {authorizationv1.ResourceAttributes{Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Namespace: "default"}, false},
		"delete managedclusters":     {authorizationv1.ResourceAttributes{Verb: "delete", Group: "cluster.open-cluster-management.io", Resource: "managedclusters"}, false},
		"create tokenreviews":        {authorizationv1.ResourceAttributes{Verb: "create", Group: "authentication.k8s.io", Resource: "tokenreviews"}, true},
		"update clusterinventories":  {authorizationv1.ResourceAttributes{Verb: "update", Group: "fleetfit.io", Resource: "clusterinventories", Namespace: "cluster1"}, false},
		"update hpaintents/status":   {authorizationv1.ResourceAttributes{Verb: "update", Group: "fleetfit.io", Resource: "hpaintents", Subresource: "status", Namespace: "default"}, true},
		"create manifestworks":       {authorizationv1.ResourceAttributes{Verb: "create", Group: "work.open-cluster-management.io", Resource: "manifestworks", Namespace: "cluster1"}, true},
		"patch placements (no spec)": {authorizationv1.ResourceAttributes{Verb: "patch", Group: "cluster.open-cluster-management.io", Resource: "placements", Namespace: "default"}, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: sa, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + deployhub.Namespace}, ResourceAttributes: &tc.attrs,
		}}
		got, err := kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != tc.want {
			t.Errorf("%s: %s allowed = %v, want %v", name, sa, got.Status.Allowed, tc.want)
		}
	}

	// Installing again writes nothing.
	objs := hubObjects(t, image, placementmode.Annotated)
	before := resourceVersions(t, cp.AdminConfig(), objs)
	if _, _, err := runFleetfit(t, installHub...); err != nil {
		t.Fatalf("second fleetfit install hub: %v", err)
	}
	if diff := cmp.Diff(before, resourceVersions(t, cp.AdminConfig(), objs)); diff != "" {
		t.Errorf("resourceVersions changed by installing again (-before,+after):\n%s", diff)
	}

	t.Run("conflicts", func(t *testing.T) {
		setImage := func(manager, image string) {
			t.Helper()
			d, err := kube.AppsV1().Deployments(deployhub.Namespace).Get(ctx, deployhub.DeploymentName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d.Spec.Template.Spec.Containers[0].Image = image
			if _, err := kube.AppsV1().Deployments(deployhub.Namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: manager}); err != nil {
				t.Fatal(err)
			}
		}
		image := func() string {
			t.Helper()
			d, err := kube.AppsV1().Deployments(deployhub.Namespace).Get(ctx, deployhub.DeploymentName, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return d.Spec.Template.Spec.Containers[0].Image
		}

		// Someone edits the image: installing again refuses to undo it
		// unless told to.
		setImage("kubectl-edit", "registry.example.com/fleetfit:edited")
		_, _, err := runFleetfit(t, installHub...)
		if err == nil || !strings.Contains(err.Error(), `"kubectl-edit"`) || !strings.Contains(err.Error(), "--force-conflicts") ||
			!strings.Contains(err.Error(), `.spec.template.spec.containers[name="fleetfit-hub"].image`) {
			t.Errorf("installing over kubectl-edit's image: got error %v, want one naming the manager, the field and --force-conflicts", err)
		}
		if got := image(); got != "registry.example.com/fleetfit:edited" {
			t.Errorf("image after a refused install = %q, want the edited one", got)
		}
		if _, _, err := runFleetfit(t, append(slices.Clone(installHub), "--force-conflicts")...); err != nil {
			t.Fatalf("fleetfit install hub --force-conflicts: %v", err)
		}
		if got := image(); got != "registry.example.com/fleetfit:test" {
			t.Errorf("image after --force-conflicts = %q, want fleetfit's", got)
		}

		// What fleetfit itself wrote with a plain update (as older installers
		// did) is fleetfit's to change.
		setImage(install.FieldManager, "registry.example.com/fleetfit:old")
		if _, _, err := runFleetfit(t, installHub...); err != nil {
			t.Fatalf("installing over fleetfit's own update: %v", err)
		}
		if got := image(); got != "registry.example.com/fleetfit:test" {
			t.Errorf("image after installing over fleetfit's own update = %q, want the installed one", got)
		}
	})
}

// inHubNamespace says whether ref is one of deploy/hub's objects in its
// namespace, by its kind.
func inHubNamespace(ref string) bool {
	kind, _, _ := strings.Cut(ref, "/")
	switch kind {
	case "serviceaccount", "deployment.apps", "service", "role.rbac.authorization.k8s.io", "rolebinding.rbac.authorization.k8s.io":
		return true
	}
	return false
}

func crdRefs(t *testing.T, load func() ([]*apiextensionsv1.CustomResourceDefinition, error)) []string {
	t.Helper()
	crds, err := load()
	if err != nil {
		t.Fatal(err)
	}
	refs := make([]string, len(crds))
	for i, crd := range crds {
		refs[i] = "customresourcedefinition.apiextensions.k8s.io/" + crd.Name
	}
	return refs
}

func lines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func hubObjects(t *testing.T, image string, mode placementmode.Mode) []*unstructured.Unstructured {
	t.Helper()
	crds, err := manifests.HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := install.CRDObjects(crds)
	if err != nil {
		t.Fatal(err)
	}
	hubObjs, err := install.HubObjects(install.HubOptions{Image: image, Placements: mode})
	if err != nil {
		t.Fatal(err)
	}
	addOnObjs, err := install.AddOnObjects(install.AddOnOptions{Image: image})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Concat(objs, hubObjs, addOnObjs)
}

// resourceVersions reads the objects from the cluster: their
// resourceVersions by kind, namespace and name.
func resourceVersions(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	out := map[string]string{}
	for _, obj := range objs {
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if ns := obj.GetNamespace(); ns != "" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		got, err := ri.Get(t.Context(), obj.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("%s %s/%s", gvk.Kind, obj.GetNamespace(), obj.GetName())] = got.GetResourceVersion()
	}
	return out
}
