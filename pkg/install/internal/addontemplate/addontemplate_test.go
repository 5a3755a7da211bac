package addontemplate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fleetfit/fleetfit/pkg/install"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
)

// TestAddOnTemplateIsCurrent checks that the committed template,
// deploy/addon/addontemplate.yaml, is what the agent's manifests make now.
func TestAddOnTemplateIsCurrent(t *testing.T) {
	want, err := Render(build(t, agentSources(t)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, deployaddon.AddOnTemplate) {
		t.Errorf("deploy/addon/addontemplate.yaml is out of date: run make generate")
	}
}

func build(t *testing.T, src Sources) *addonv1alpha1.AddOnTemplate {
	t.Helper()
	tmpl, err := Build(src)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func agentSources(t *testing.T) Sources {
	t.Helper()
	src, err := AgentSources()
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// manifestsOf decodes the template's manifests as OCM's add-on manager
// renders them for cluster1.
func manifestsOf(t *testing.T, tmpl *addonv1alpha1.AddOnTemplate) []*unstructured.Unstructured {
	t.Helper()
	render := strings.NewReplacer(deployaddon.ClusterNameVariable, "cluster1", deployaddon.HubKubeconfigVariable, "/managed/hub-kubeconfig/kubeconfig")
	var out []*unstructured.Unstructured
	for i, m := range tmpl.Spec.AgentSpec.Workload.Manifests {
		rendered := render.Replace(string(m.Raw))
		if strings.Contains(rendered, "{{") {
			t.Errorf("manifest %d keeps a variable OCM does not fill in: %s", i, rendered)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON([]byte(rendered)); err != nil {
			t.Fatalf("manifest %d: %v", i, err)
		}
		out = append(out, obj)
	}
	return out
}

func ref(obj *unstructured.Unstructured) string {
	return obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// TestTemplateHoldsTheAgent checks that the template deploys every object
// `fleetfit install agent` applies on a managed cluster, except its hub
// kubeconfig Secret, in the same order and, but for the Deployment, as they
// are.
func TestTemplateHoldsTheAgent(t *testing.T) {
	src := agentSources(t)
	got := manifestsOf(t, build(t, src))

	var want []*unstructured.Unstructured
	for _, m := range [][]byte{src.SpokeRBAC} {
		objs, err := install.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, objs...)
	}
	crds, err := install.CRDObjects(src.CRDs)
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, crds...)
	for _, m := range [][]byte{deployagent.Injector, deployagent.Deployment("IMAGE", "cluster1")} {
		objs, err := install.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, objs...)
	}

	var wantRefs, gotRefs []string
	for _, o := range want {
		wantRefs = append(wantRefs, ref(o))
	}
	for _, o := range got {
		gotRefs = append(gotRefs, ref(o))
	}
	if diff := cmp.Diff(wantRefs, gotRefs); diff != "" {
		t.Fatalf("objects of the template (-want,+got):\n%s", diff)
	}
	for _, name := range []string{"machinegroups.fleetfit.io", "machinenodepools.fleetfit.io"} {
		if !strings.Contains(strings.Join(gotRefs, " "), "CustomResourceDefinition//"+name) {
			t.Errorf("the template lacks the CRD %s", name)
		}
	}
	for i := range want {
		if want[i].GetKind() == "Deployment" {
			continue
		}
		// As JSON, so that numbers decode alike.
		raw, err := want[i].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if err := want[i].UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[i].Object, got[i].Object); diff != "" {
			t.Errorf("%s differs from deploy/agent's (-want,+got):\n%s", ref(want[i]), diff)
		}
	}
}

// TestTemplateDeploymentUsesOCMsVariables checks that the agent is told its
// cluster's name and its hub kubeconfig by OCM, and mounts no Secret of its
// own beside the one OCM adds.
func TestTemplateDeploymentUsesOCMsVariables(t *testing.T) {
	tmpl := build(t, agentSources(t))
	var deployment *appsv1.Deployment
	for _, m := range tmpl.Spec.AgentSpec.Workload.Manifests {
		var obj appsv1.Deployment
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			t.Fatal(err)
		}
		if obj.Kind == "Deployment" {
			if deployment != nil {
				t.Fatalf("two Deployments in the template")
			}
			deployment = &obj
		}
	}
	if deployment == nil {
		t.Fatal("no Deployment in the template")
	}
	// OCM registers the agent in the namespace of the template's first
	// Deployment and writes its hub kubeconfig Secret there.
	if deployment.Namespace != deployagent.Namespace {
		t.Errorf("the Deployment's namespace = %q, want %q", deployment.Namespace, deployagent.Namespace)
	}
	containers := deployment.Spec.Template.Spec.Containers
	if len(containers) != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", len(containers))
	}
	c := containers[0]
	wantArgs := []string{"--cluster-name={{CLUSTER_NAME}}", "--hub-kubeconfig={{HUB_KUBECONFIG}}"}
	if diff := cmp.Diff(wantArgs, c.Args); diff != "" {
		t.Errorf("args (-want,+got):\n%s", diff)
	}
	if c.Image != deployaddon.ImagePlaceholder {
		t.Errorf("image = %q, want the placeholder %q", c.Image, deployaddon.ImagePlaceholder)
	}
	for _, v := range deployment.Spec.Template.Spec.Volumes {
		// OCM adds a volume named hub-kubeconfig; two of one name would
		// make the Deployment invalid.
		if v.Name == "hub-kubeconfig" || (v.Secret != nil && v.Secret.SecretName == deployagent.HubKubeconfigSecret) {
			t.Errorf("the Deployment keeps volume %+v, which OCM's own hub kubeconfig replaces", v)
		}
	}
	if len(c.VolumeMounts) != 0 {
		t.Errorf("the container keeps volume mounts %+v", c.VolumeMounts)
	}
}

// TestTemplateRegistration checks that OCM issues the agent a hub client
// certificate and binds it exactly fleetfit:agent, in its cluster's
// namespace only.
func TestTemplateRegistration(t *testing.T) {
	tmpl := build(t, agentSources(t))
	want := []addonv1alpha1.RegistrationSpec{{
		Type: addonv1alpha1.RegistrationTypeKubeClient,
		KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{HubPermissions: []addonv1alpha1.HubPermissionConfig{{
			Type:           addonv1alpha1.HubPermissionsBindingCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: "fleetfit:agent"},
		}}},
	}}
	if diff := cmp.Diff(want, tmpl.Spec.Registration); diff != "" {
		t.Errorf("registration (-want,+got):\n%s", diff)
	}
	if tmpl.Name != deployaddon.TemplateName || tmpl.Spec.AddonName != deployaddon.Name {
		t.Errorf("template %q for add-on %q, want %q for %q", tmpl.Name, tmpl.Spec.AddonName, deployaddon.TemplateName, deployaddon.Name)
	}
}

// TestBuildFollowsItsSources checks that what the sources say is what the
// template holds, and that sources the add-on cannot express are refused.
func TestBuildFollowsItsSources(t *testing.T) {
	src := agentSources(t)

	t.Run("more hub roles", func(t *testing.T) {
		s := src
		s.HubRBAC = append([]byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: fleetfit:agent:claims}\n---\n"), src.HubRBAC...)
		var got []string
		for _, p := range build(t, s).Spec.Registration[0].KubeClient.HubPermissions {
			got = append(got, p.CurrentCluster.ClusterRoleName)
		}
		if diff := cmp.Diff([]string{"fleetfit:agent:claims", "fleetfit:agent"}, got); diff != "" {
			t.Errorf("hub permissions (-want,+got):\n%s", diff)
		}
	})
	t.Run("a spoke object more", func(t *testing.T) {
		s := src
		s.SpokeRBAC = append(append([]byte{}, src.SpokeRBAC...), []byte("\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: fleetfit-agent}\n")...)
		found := false
		for _, o := range manifestsOf(t, build(t, s)) {
			found = found || ref(o) == "ConfigMap/fleetfit-agent/extra"
		}
		if !found {
			t.Errorf("an object added to the spoke RBAC is not in the template")
		}
	})

	for name, tc := range map[string]struct {
		change func(*Sources)
		want   string
	}{
		"a hub Role": {
			change: func(s *Sources) {
				s.HubRBAC = []byte("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r, namespace: x}\n")
			},
			want: "hubPermissions grant ClusterRoles only",
		},
		"no hub role": {
			change: func(s *Sources) { s.HubRBAC = nil },
			want:   "holds no ClusterRole",
		},
		"no hub kubeconfig volume": {
			change: func(s *Sources) { s.HubKubeconfigSecret = "another-secret" },
			want:   "mounts no Secret another-secret",
		},
		"an unknown variable": {
			change: func(s *Sources) {
				s.Injector = append(append([]byte{}, src.Injector...), []byte("\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: fleetfit-agent}\ndata: {a: '{{INSTALL_NAMESPACE}}'}\n")...)
			},
			want: `"{{INSTALL_NAMESPACE}}`,
		},
		"an unclosed variable": {
			change: func(s *Sources) {
				s.Injector = append(append([]byte{}, src.Injector...), []byte("\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: fleetfit-agent}\ndata: {a: 'x {{ y'}\n")...)
			},
			want: "is not a template variable OCM provides",
		},
	} {
		t.Run(name, func(t *testing.T) {
			s := src
			tc.change(&s)
			_, err := Build(s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
