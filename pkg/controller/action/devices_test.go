package action

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const a100 = `device.attributes["gpu.example.com"].model == "A100"`

// devicesRequirement is a mandatory device requirement.
func devicesRequirement(name, class string, count *int32, selectors ...string) v1alpha1.ResourceRequirement {
	r := ut.MakeRequirement(name).Obj()
	r.Devices = &v1alpha1.DeviceRequirement{DeviceClassName: class, Count: count}
	for _, s := range selectors {
		r.Devices.Selectors = append(r.Devices.Selectors, v1alpha1.DeviceSelector{CEL: &v1alpha1.CELDeviceSelector{Expression: s}})
	}
	return r
}

// twoContainers is a Deployment whose pods have the containers app and sidecar.
func twoContainers(name string) *appsv1.Deployment {
	d := deployment(name, "")
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar"})
	return d
}

// workObjects returns the manifests of w, decoded strictly into typed objects where their kind
// is one of the test's, so that a field name the API does not know fails the test.
func workObjects(t *testing.T, w *workv1.ManifestWork) (kinds []string, templates map[string]*resourcev1.ResourceClaimTemplate, deployments map[string]*appsv1.Deployment) {
	t.Helper()
	templates, deployments = map[string]*resourcev1.ResourceClaimTemplate{}, map[string]*appsv1.Deployment{}
	for _, m := range w.Spec.Workload.Manifests {
		u := m.Object.(*unstructured.Unstructured)
		kinds = append(kinds, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
		var into any
		switch u.GetKind() {
		case "ResourceClaimTemplate":
			tmpl := &resourcev1.ResourceClaimTemplate{}
			templates[u.GetName()], into = tmpl, tmpl
		case "Deployment":
			d := &appsv1.Deployment{}
			deployments[u.GetName()], into = d, d
		default:
			continue
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	return kinds, templates, deployments
}

// TestDesiredWorkDevices delivers consumers with device requirements: each gets a
// ResourceClaimTemplate in its workload's namespace, before the workload, with one request
// per requirement, and its container claims it.
func TestDesiredWorkDevices(t *testing.T) {
	in := ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", "app").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("2").Obj(),
			devicesRequirement("gpu", "gpu.example.com", ptr.To[int32](2), a100, `device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`),
			devicesRequirement("NIC Port", "nic.example.com", nil),
		).Obj(),
		// The sidecar of the same pod has a template and a claim of its own.
		ut.MakeConsumer("Log_Shipper").Target("Deployment", "web", "sidecar").Requirement(
			devicesRequirement("fpga", "fpga.example.com", nil),
		).Obj(),
		// A consumer of features alone, with no container named: the first container gets
		// the claim.
		ut.MakeConsumer("batch").Target("Deployment", "batch", "").Requirement(
			devicesRequirement("gpu", "gpu.example.com", nil),
		).Obj(),
		ut.MakeConsumer("tools").Target("Deployment", "tools", "app").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("1").Obj(),
		).Obj(),
	).Manifest(deployment("tools", "")).Manifest(twoContainers("web")).Manifest(deployment("batch", "jobs")).Obj()
	r, err := hpa.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	w, err := desiredWork(in, r, "cluster1", nil)
	if err != nil {
		t.Fatal(err)
	}
	logShipper := "Log_Shipper"
	logClaim := PodClaimName(logShipper)
	nicRequest := requestName("NIC Port")
	kinds, templates, deployments := workObjects(t, w)
	wantKinds := []string{
		"Namespace /jobs", "Namespace /shop",
		"Deployment shop/tools",
		"ResourceClaimTemplate shop/shop.web.web", "ResourceClaimTemplate shop/shop.web." + logClaim, "ResourceClaimTemplate jobs/shop.web.batch",
		"Deployment shop/web", "Deployment jobs/batch",
	}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("manifests (-want,+got):\n%s", diff)
	}
	labels := map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: "web"}
	template := func(name, namespace string, requests ...resourcev1.DeviceRequest) *resourcev1.ResourceClaimTemplate {
		return &resourcev1.ResourceClaimTemplate{
			TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
			Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: requests}}},
		}
	}
	request := func(name, class string, count int64, selectors ...string) resourcev1.DeviceRequest {
		r := resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count,
		}}
		for _, s := range selectors {
			r.Exactly.Selectors = append(r.Exactly.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
		}
		return r
	}
	wantTemplates := map[string]*resourcev1.ResourceClaimTemplate{
		"shop.web.web": template("shop.web.web", "shop",
			request("gpu", "gpu.example.com", 2, a100, `device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`),
			request(nicRequest, "nic.example.com", 1)),
		"shop.web." + logClaim: template("shop.web."+logClaim, "shop", request("fpga", "fpga.example.com", 1)),
		"shop.web.batch":       template("shop.web.batch", "jobs", request("gpu", "gpu.example.com", 1)),
	}
	if diff := cmp.Diff(wantTemplates, templates); diff != "" {
		t.Errorf("ResourceClaimTemplates (-want,+got):\n%s", diff)
	}
	for name, tmpl := range templates {
		if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
			t.Errorf("template name %q: %v", name, problems)
		}
		for _, req := range tmpl.Spec.Spec.Devices.Requests {
			if problems := validation.IsDNS1123Label(req.Name); len(problems) > 0 {
				t.Errorf("template %s, request name %q: %v", name, req.Name, problems)
			}
		}
	}

	web := deployments["web"].Spec.Template.Spec
	wantClaims := []corev1.PodResourceClaim{
		{Name: "web", ResourceClaimTemplateName: ptr.To("shop.web.web")},
		{Name: logClaim, ResourceClaimTemplateName: ptr.To("shop.web." + logClaim)},
	}
	if diff := cmp.Diff(wantClaims, web.ResourceClaims); diff != "" {
		t.Errorf("the web pods' claims (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ResourceClaim{{Name: "web"}}, web.Containers[0].Resources.Claims); diff != "" {
		t.Errorf("claims of container app (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ResourceClaim{{Name: logClaim}}, web.Containers[1].Resources.Claims); diff != "" {
		t.Errorf("claims of container sidecar (-want,+got):\n%s", diff)
	}
	if got := web.Containers[0].Resources.Requests.Cpu().String(); got != "2" {
		t.Errorf("cpu request of container app %s, want 2: the claims come beside the usual mutations", got)
	}
	batch := deployments["batch"].Spec.Template.Spec
	if diff := cmp.Diff([]corev1.PodResourceClaim{{Name: "batch", ResourceClaimTemplateName: ptr.To("shop.web.batch")}}, batch.ResourceClaims); diff != "" {
		t.Errorf("the batch pods' claims (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ResourceClaim{{Name: "batch"}}, batch.Containers[0].Resources.Claims); diff != "" {
		t.Errorf("claims of batch's first container (-want,+got):\n%s", diff)
	}
	if tools := deployments["tools"].Spec.Template.Spec; len(tools.ResourceClaims) > 0 || len(tools.Containers[0].Resources.Claims) > 0 {
		t.Errorf("the tools Deployment has no device requirements, but claims %+v", tools)
	}
	for _, c := range w.Spec.ManifestConfigs {
		if c.ResourceIdentifier.Resource != "deployments" {
			t.Errorf("status feedback of %+v: only the workloads report back", c.ResourceIdentifier)
		}
	}

	again, err := desiredWork(in, r, "cluster1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, again); diff != "" {
		t.Errorf("desiredWork is not deterministic (-first,+second):\n%s", diff)
	}
}

// ownTemplate is a ResourceClaimTemplate a workload carries for its own claims.
func ownTemplate(name string) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1,
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: a100}}},
			}}},
		}}},
	}
}

// claiming is a Deployment whose app container claims the template.
func claiming(name, template string) *appsv1.Deployment {
	d := deployment(name, "")
	d.Spec.Template.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To(template)}}
	d.Spec.Template.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	return d
}

// TestDesiredWorkOwnClaims: a workload that carries its ResourceClaimTemplate and claims it is
// delivered with them as written, beside the usual mutations; a consumer's device
// requirements add their own claim and keep the workload's.
func TestDesiredWorkOwnClaims(t *testing.T) {
	in := ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", "app").Requirement(ut.MakeResource("cpu", "cpu").Requests("2").Obj()).Obj(),
	).Manifest(ownTemplate("web-gpu")).Manifest(claiming("web", "web-gpu")).Obj()
	r, err := hpa.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := []hpa.Device{{Name: "gpu/gpu", Class: "gpu.example.com", Count: 1, Selectors: []string{a100}, FromWorkload: true}}; !cmp.Equal(want, r.Pods[0].Devices) {
		t.Fatalf("the pod's devices %+v, want the workload's request %+v", r.Pods[0].Devices, want)
	}
	w, err := desiredWork(in, r, "cluster1", nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds, templates, deployments := workObjects(t, w)
	if diff := cmp.Diff([]string{"Namespace /shop", "ResourceClaimTemplate shop/web-gpu", "Deployment shop/web"}, kinds); diff != "" {
		t.Errorf("manifests (-want,+got):\n%s", diff)
	}
	wantTemplate := ownTemplate("web-gpu")
	wantTemplate.Namespace = "shop"
	if diff := cmp.Diff(wantTemplate, templates["web-gpu"]); diff != "" {
		t.Errorf("the workload's template is delivered as written, in the intent's namespace (-want,+got):\n%s", diff)
	}
	// The Deployment is the manifest with the usual mutations only: the consumer's cpu and the
	// intent's pod labels.
	want := claiming("web", "web-gpu")
	want.Namespace = "shop"
	want.Spec.Template.Labels = map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: "web"}
	want.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: deployments["web"].Spec.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]}
	if diff := cmp.Diff(want, deployments["web"]); diff != "" {
		t.Errorf("the Deployment (-want,+got):\n%s", diff)
	}
	if got := deployments["web"].Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "2" {
		t.Errorf("cpu request %s, want 2", got)
	}

	// A device requirement beside the workload's own claim adds fleetfit's claim, before it.
	in = ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(
		ut.MakeConsumer("train").Target("Deployment", "web", "app").Requirement(devicesRequirement("nic", "nic.example.com", nil)).Obj(),
	).Manifest(ownTemplate("web-gpu")).Manifest(claiming("web", "web-gpu")).Obj()
	if r, err = hpa.Resolve(in); err != nil {
		t.Fatal(err)
	}
	if w, err = desiredWork(in, r, "cluster1", nil); err != nil {
		t.Fatal(err)
	}
	kinds, _, deployments = workObjects(t, w)
	wantKinds := []string{"Namespace /shop", "ResourceClaimTemplate shop/web-gpu", "ResourceClaimTemplate shop/shop.web.train", "Deployment shop/web"}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("manifests (-want,+got):\n%s", diff)
	}
	spec := deployments["web"].Spec.Template.Spec
	wantClaims := []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("web-gpu")}, {Name: "train", ResourceClaimTemplateName: ptr.To("shop.web.train")}}
	if diff := cmp.Diff(wantClaims, spec.ResourceClaims); diff != "" {
		t.Errorf("pod claims (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]corev1.ResourceClaim{{Name: "gpu"}, {Name: "train"}}, spec.Containers[0].Resources.Claims); diff != "" {
		t.Errorf("container claims (-want,+got):\n%s", diff)
	}
}

// TestDesiredWorkClaimConflicts: a workload's claim or template in the place of fleetfit's is
// refused with a message that names it.
func TestDesiredWorkClaimConflicts(t *testing.T) {
	consumer := ut.MakeConsumer("train").Target("Deployment", "web", "app").Requirement(devicesRequirement("gpu", "gpu.example.com", nil)).Obj()
	cases := map[string]struct {
		in   *v1alpha1.HPAIntent
		want string
	}{
		"a claim of the consumer's name": {
			in: ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(consumer).Manifest(ownTemplate("mine")).Manifest(func() *appsv1.Deployment {
				d := claiming("web", "mine")
				d.Spec.Template.Spec.ResourceClaims[0].Name = "train"
				d.Spec.Template.Spec.Containers[0].Resources.Claims[0].Name = "train"
				return d
			}()).Obj(),
			want: `consumer "train": Deployment web: spec.template.spec.resourceClaims[0] "train" claims the ResourceClaimTemplate "mine" where fleetfit delivers the pods with the claim "train" ` +
				`of the ResourceClaimTemplate "shop.web.train" for the intent's device requirements; rename the claim in the manifest`,
		},
		"a template of fleetfit's name": {
			in:   ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(consumer).Manifest(ownTemplate("shop.web.train")).Manifest(deployment("web", "")).Obj(),
			want: `the workload's ResourceClaimTemplate shop/shop.web.train has the name fleetfit gives the ResourceClaimTemplate of a consumer's device requirements; rename it`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := hpa.Resolve(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			_, err = desiredWork(tc.in, r, "cluster1", nil)
			if err == nil || err.Error() != tc.want {
				t.Errorf("desiredWork returned error %v, want %s", err, tc.want)
			}
		})
	}
}

func TestClaimNames(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"gpu", "gpu"},
		{"a100-x2", "a100-x2"},
		{"GPU A100", "gpu-a100-" + nameHash("GPU A100")},
		{"nic_port", "nic-port-" + nameHash("nic_port")},
		{"-edge-", "edge-" + nameHash("-edge-")},
		{"___", nameHash("___")},
		{"Ünïcode", "n-code-" + nameHash("Ünïcode")},
		{strings.Repeat("X", 63), strings.Repeat("x", 46) + "-" + nameHash(strings.Repeat("X", 63))},
	} {
		got := dnsLabel(tc.name)
		if got != tc.want {
			t.Errorf("dnsLabel(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if problems := validation.IsDNS1123Label(got); len(problems) > 0 {
			t.Errorf("dnsLabel(%q) = %q: %v", tc.name, got, problems)
		}
	}
	if a, b := dnsLabel("GPU"), dnsLabel("gpu"); a == b {
		t.Errorf("requirements GPU and gpu both name the request %q", a)
	}

	cases := map[string]struct {
		namespace, name, consumer string
		want                      string // "" for a cut name
	}{
		"short":                   {"shop", "web", "train", "shop.web.train"},
		"a consumer to derive":    {"shop", "web", "Train", "shop.web.train-" + nameHash("Train")},
		"a dotted intent":         {"shop", "web.v2", "train", "shop.web.v2.train"},
		"just fits":               {"shop", longName(253-len("shop.")-len(".train"), ""), "train", "shop." + longName(253-len("shop.")-len(".train"), "") + ".train"},
		"too long":                {"shop", longName(253-len("shop.")-len(".train")+1, ""), "train", ""},
		"a cut work name":         {longNamespace, longName(253, ""), "train", ""},
		"too long with a long ns": {longNamespace, longName(200, ""), strings.Repeat("c", 63), ""},
	}
	seen := map[string]string{}
	for name, tc := range cases {
		in := ut.MakeHPAIntent(tc.name, tc.namespace).Obj()
		got := ClaimTemplateName(in, tc.consumer)
		if problems := validation.IsDNS1123Subdomain(got); len(problems) > 0 {
			t.Errorf("%s: %q: %v", name, got, problems)
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("%s: ClaimTemplateName = %q, want %q", name, got, tc.want)
		}
		if tc.want == "" && (strings.Contains(got, ".") || !strings.HasSuffix(got, "-"+nameHash(tc.namespace+"/"+tc.name+"/"+tc.consumer))) {
			t.Errorf("%s: cut ClaimTemplateName %q has a dot or lacks the hash", name, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%s and %s share the template name %q", name, other, got)
		}
		seen[got] = name
	}
	// Intents a.b with consumer c and a with consumer b.c cannot meet: a consumer has no dot.
	if x, y := ClaimTemplateName(ut.MakeHPAIntent("a.b", "ns").Obj(), "c"), ClaimTemplateName(ut.MakeHPAIntent("a", "ns").Obj(), "b.c"); x == y {
		t.Errorf("two consumers share the template name %q", x)
	}
}
