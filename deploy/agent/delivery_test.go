package agent_test

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
)

// TestDeliveryNamespaceOptsIn checks that a namespace granted for delivery is
// one whose guest pods the injector's webhook is sent: a workload delivered
// there that takes a machine type gets its machine.
func TestDeliveryNamespaceOptsIn(t *testing.T) {
	objs := decodeAll(t, deployagent.Injector, deployagent.DeliveryRBAC("shop"))
	cfg := find[*admissionregistrationv1.MutatingWebhookConfiguration](t, objs, deployagent.InjectorWebhookConfiguration)
	ns := find[*corev1.Namespace](t, objs, "shop")
	for _, w := range cfg.Webhooks {
		sel, err := metav1.LabelSelectorAsSelector(w.NamespaceSelector)
		if err != nil {
			t.Fatalf("webhook %s: %v", w.Name, err)
		}
		if sel.Empty() || !sel.Matches(labels.Set(ns.Labels)) {
			t.Errorf("webhook %s selects namespaces %q; the delivery namespace's labels %v do not match it", w.Name, sel, ns.Labels)
		}
	}
}
