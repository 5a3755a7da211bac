package injector_test

import (
	"net"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/injector"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// decodeAll decodes every object of manifests, as the installer does, into its typed form.
func decodeAll(t *testing.T, manifests ...[]byte) []runtime.Object {
	t.Helper()
	objs, err := install.Decode(manifests...)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]runtime.Object, 0, len(objs))
	for _, u := range objs {
		typed, err := scheme.Scheme.New(u.GroupVersionKind())
		if err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
		out = append(out, typed)
	}
	return out
}

// find returns the object of type T named name, failing the test when there is none.
func find[T runtime.Object](t *testing.T, objs []runtime.Object, name string) T {
	t.Helper()
	for _, o := range objs {
		if typed, ok := o.(T); ok {
			if m, ok := any(typed).(interface{ GetName() string }); ok && m.GetName() == name {
				return typed
			}
		}
	}
	var zero T
	t.Fatalf("no %T %s", zero, name)
	return zero
}

// TestInjectorManifests checks that the injector's manifests agree with the
// injector's defaults and with the agent's Deployment and RBAC: the webhook
// reaches the agent's port at the injector's path, sends only guest pods of
// opted-in namespaces, and the agent may do what its certificate rotation
// needs.
func TestInjectorManifests(t *testing.T) {
	objs := decodeAll(t, deployagent.SpokeRBAC, deployagent.Injector, deployagent.Deployment("r/f:1", "c1"))

	cfg := find[*admissionregistrationv1.MutatingWebhookConfiguration](t, objs, deployagent.InjectorWebhookConfiguration)
	if len(cfg.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(cfg.Webhooks))
	}
	w := cfg.Webhooks[0]
	type summary struct {
		Config, Namespace, Service, Path string
		CABundle                         []byte
		Rules                            []admissionregistrationv1.RuleWithOperations
		NamespaceLabels, ObjectLabels    map[string]string
		FailurePolicy                    admissionregistrationv1.FailurePolicyType
		SideEffects                      admissionregistrationv1.SideEffectClass
	}
	opts := injector.NewOptions()
	scope := admissionregistrationv1.NamespacedScope
	want := summary{
		Config: opts.WebhookConfiguration, Namespace: opts.Namespace, Service: opts.Service, Path: injector.Path,
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope},
		}},
		NamespaceLabels: map[string]string{machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled},
		ObjectLabels:    map[string]string{machinegroup.LabelPodRole: machinegroup.PodRoleGuest},
		FailurePolicy:   admissionregistrationv1.Fail,
		SideEffects:     admissionregistrationv1.SideEffectClassNone,
	}
	got := summary{
		Config: cfg.Name, Namespace: w.ClientConfig.Service.Namespace, Service: w.ClientConfig.Service.Name, Path: *w.ClientConfig.Service.Path,
		CABundle: w.ClientConfig.CABundle, Rules: w.Rules,
		NamespaceLabels: w.NamespaceSelector.MatchLabels, ObjectLabels: w.ObjectSelector.MatchLabels,
		FailurePolicy: *w.FailurePolicy, SideEffects: *w.SideEffects,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("webhook (-want,+got):\n%s", diff)
	}
	if *w.TimeoutSeconds > 10 {
		t.Errorf("timeoutSeconds %d: a guest's creation waits that long when the agent is away; keep it small", *w.TimeoutSeconds)
	}

	// The Service sends the webhook's port to the agent's container port
	// the injector listens on by default.
	svc := find[*corev1.Service](t, objs, opts.Service)
	d := find[*appsv1.Deployment](t, objs, "fleetfit-agent")
	if svc.Namespace != opts.Namespace || svc.Spec.Ports[0].Port != *w.ClientConfig.Service.Port {
		t.Errorf("Service %s/%s port %d; want in %s with the webhook's port %d", svc.Namespace, svc.Name, svc.Spec.Ports[0].Port, opts.Namespace, *w.ClientConfig.Service.Port)
	}
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("the Service selects %s=%s, which the agent's pods do not have", k, v)
		}
	}
	_, port, _ := net.SplitHostPort(opts.BindAddress)
	target := svc.Spec.Ports[0].TargetPort.String()
	i := slices.IndexFunc(d.Spec.Template.Spec.Containers[0].Ports, func(p corev1.ContainerPort) bool { return p.Name == target })
	if i < 0 {
		t.Fatalf("the agent's container has no port %q", target)
	}
	if got := d.Spec.Template.Spec.Containers[0].Ports[i].ContainerPort; got != 9443 || port != "9443" {
		t.Errorf("container port %d, injector's default port %s; want both 9443", got, port)
	}

	// The agent may update the certificates' objects and patch its webhook
	// configuration, by name.
	role := find[*rbacv1.Role](t, objs, "fleetfit:spoke:agent")
	if role.Namespace != opts.Namespace {
		t.Errorf("Role in %s, want %s", role.Namespace, opts.Namespace)
	}
	if diff := cmp.Diff([]string{injector.SignerSecret, injector.ServingSecret, injector.CABundleConfigMap}, namesFor(role.Rules, "update")); diff != "" {
		t.Errorf("Role: names it may update (-want,+got):\n%s", diff)
	}
	cr := find[*rbacv1.ClusterRole](t, objs, "fleetfit:spoke:agent")
	if diff := cmp.Diff([]string{opts.WebhookConfiguration}, namesFor(cr.Rules, "patch")); diff != "" {
		t.Errorf("ClusterRole: names it may patch (-want,+got):\n%s", diff)
	}
}

// namesFor lists the resourceNames of the rules that grant verb.
func namesFor(rules []rbacv1.PolicyRule, verb string) []string {
	var names []string
	for _, r := range rules {
		if slices.Contains(r.Verbs, verb) {
			names = append(names, r.ResourceNames...)
		}
	}
	return names
}
