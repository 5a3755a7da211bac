package install

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
)

func TestDefaultImage(t *testing.T) {
	img := DefaultImage()
	tag, ok := strings.CutPrefix(img, ImageRepository+":")
	if !ok || tag == "" {
		t.Fatalf("DefaultImage() = %q, want %s:<version>", img, ImageRepository)
	}
	if notInTag.MatchString(tag) || strings.HasPrefix(tag, ".") || strings.HasPrefix(tag, "-") || len(tag) > 128 {
		t.Errorf("DefaultImage() = %q: %q is not a valid tag", img, tag)
	}
}

// container returns a Deployment's only container.
func container(t *testing.T, objs []*unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" || o.GetName() != name {
			continue
		}
		cs, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if err != nil || len(cs) != 1 {
			t.Fatalf("Deployment %s: containers %v (%v), want one", name, cs, err)
		}
		return cs[0].(map[string]any)
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

func TestHubObjects(t *testing.T) {
	for name, tc := range map[string]struct {
		opts     HubOptions
		wantArgs []any
		wantErr  string
	}{
		"all": {
			opts:     HubOptions{Image: "r/f:1", Placements: placementmode.All},
			wantArgs: []any{"--placements=all", "--secure-port=9443", "--cert-dir=/tmp/serving-certs"},
		},
		"annotated": {
			opts:     HubOptions{Image: "r/f:1", Placements: placementmode.Annotated},
			wantArgs: []any{"--placements=annotated", "--secure-port=9443", "--cert-dir=/tmp/serving-certs"},
		},
		"unknown mode": {opts: HubOptions{Image: "r/f:1", Placements: "some"}, wantErr: `placements must be "all" or "annotated", not "some"`},
		"no image":     {opts: HubOptions{Placements: placementmode.All}, wantErr: "the image must not be empty"},
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := HubObjects(tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := container(t, objs, "fleetfit-hub")
			if diff := cmp.Diff(map[string]any{"image": tc.opts.Image, "args": tc.wantArgs}, map[string]any{"image": c["image"], "args": c["args"]}); diff != "" {
				t.Errorf("container (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSetArg(t *testing.T) {
	for name, tc := range map[string]struct {
		args []any
		want []any
	}{
		"replaced":   {args: []any{"--a=1", "--placements=all", "--b"}, want: []any{"--a=1", "--placements=annotated", "--b"}},
		"bare flag":  {args: []any{"--placements"}, want: []any{"--placements=annotated"}},
		"appended":   {args: []any{"--a=1"}, want: []any{"--a=1", "--placements=annotated"}},
		"no args":    {want: []any{"--placements=annotated"}},
		"look-alike": {args: []any{"--placements-x=1"}, want: []any{"--placements-x=1", "--placements=annotated"}},
	} {
		t.Run(name, func(t *testing.T) {
			c := map[string]any{"name": "c"}
			if tc.args != nil {
				c["args"] = tc.args
			}
			d := &unstructured.Unstructured{Object: map[string]any{"kind": "Deployment", "metadata": map[string]any{"name": "d"},
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{c}}}}}}
			if err := setArg(d, "c", "--placements", "annotated"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, container(t, []*unstructured.Unstructured{d}, "d")["args"]); diff != "" {
				t.Errorf("args (-want,+got):\n%s", diff)
			}
			if err := setArg(d, "other", "--placements", "annotated"); err == nil {
				t.Errorf("no error for a missing container")
			}
		})
	}
}

func TestAgentObjects(t *testing.T) {
	kubeconfig := []byte("apiVersion: v1\nkind: Config\n")
	objs, err := AgentObjects(AgentOptions{ClusterName: "cluster1", Image: "r/f:1", HubKubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, o := range objs {
		refs = append(refs, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{
		"Namespace /fleetfit-agent",
		"ServiceAccount fleetfit-agent/fleetfit-agent",
		"ClusterRole /fleetfit:spoke:agent",
		"ClusterRoleBinding /fleetfit:spoke:agent",
		"Role fleetfit-agent/fleetfit:spoke:agent",
		"RoleBinding fleetfit-agent/fleetfit:spoke:agent",
		"Secret fleetfit-agent/" + deployagent.HubKubeconfigSecret,
		"Service fleetfit-agent/" + deployagent.InjectorService,
		"MutatingWebhookConfiguration /" + deployagent.InjectorWebhookConfiguration,
		"Deployment fleetfit-agent/fleetfit-agent",
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("objects, in order (-want,+got):\n%s", diff)
	}
	data, _, _ := unstructured.NestedString(objs[6].Object, "data", deployagent.HubKubeconfigSecretKey)
	if got, _ := base64.StdEncoding.DecodeString(data); string(got) != string(kubeconfig) {
		t.Errorf("Secret holds %q, want the kubeconfig %q", got, kubeconfig)
	}
	c := container(t, objs, "fleetfit-agent")
	if diff := cmp.Diff(
		map[string]any{"image": "r/f:1", "args": []any{"--cluster-name=cluster1", "--hub-kubeconfig=" + deployagent.HubKubeconfigPath}},
		map[string]any{"image": c["image"], "args": c["args"]},
	); diff != "" {
		t.Errorf("container (-want,+got):\n%s", diff)
	}

	for name, o := range map[string]AgentOptions{
		"no cluster":    {Image: "r/f:1", HubKubeconfig: kubeconfig},
		"bad cluster":   {ClusterName: "a.b", Image: "r/f:1", HubKubeconfig: kubeconfig},
		"no kubeconfig": {ClusterName: "c", Image: "r/f:1"},
		"bad image":     {ClusterName: "c", Image: "r f", HubKubeconfig: kubeconfig},
	} {
		if _, err := AgentObjects(o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestDeliveryObjects checks what --delivery-namespace applies: the ClusterRole once, then per
// namespace the Namespace, opted in to the pod resource injector, its ServiceAccount and RBAC.
func TestDeliveryObjects(t *testing.T) {
	objs, err := DeliveryObjects("shop", "ml", "shop")
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	namespaceLabels := map[string]map[string]string{}
	for _, o := range objs {
		refs = append(refs, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
		if o.GetKind() == "Namespace" {
			namespaceLabels[o.GetName()] = o.GetLabels()
		}
	}
	want := []string{
		"ClusterRole /fleetfit:delivery",
		"Namespace /shop",
		"ServiceAccount shop/fleetfit-delivery",
		"RoleBinding shop/fleetfit-delivery",
		"ClusterRole /fleetfit:delivery:shop",
		"ClusterRoleBinding /fleetfit:delivery:shop",
		"Namespace /ml",
		"ServiceAccount ml/fleetfit-delivery",
		"RoleBinding ml/fleetfit-delivery",
		"ClusterRole /fleetfit:delivery:ml",
		"ClusterRoleBinding /fleetfit:delivery:ml",
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("objects, in order (-want,+got):\n%s", diff)
	}
	optIn := map[string]string{machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled}
	if diff := cmp.Diff(map[string]map[string]string{"shop": optIn, "ml": optIn}, namespaceLabels); diff != "" {
		t.Errorf("namespace labels (-want,+got):\n%s", diff)
	}
	if _, err := DeliveryObjects("Shop"); err == nil {
		t.Error("an invalid namespace name: no error")
	}
}

func TestAgentAccessObjects(t *testing.T) {
	objs, err := AgentAccessObjects("cluster1")
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, o := range objs {
		refs = append(refs, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	want := []string{
		"ClusterRole /fleetfit:agent",
		"RoleBinding cluster1/fleetfit:agent",
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Errorf("objects, in order (-want,+got):\n%s", diff)
	}
	if _, err := AgentAccessObjects("Not_A_Label"); err == nil {
		t.Errorf("no error for an invalid cluster name")
	}
}
