package injector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
)

// TestSyncCABundle checks that the caBundle of every webhook of the named
// configuration is set, that nothing else there changes, and that a
// configuration already current is not written.
func TestSyncCABundle(t *testing.T) {
	url := "https://127.0.0.1:9443/mutate-v1-pod"
	fail := admissionregistrationv1.Fail
	webhook := func(name string, ca []byte) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name:                    name,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: ca},
			FailurePolicy:           &fail,
			AdmissionReviewVersions: []string{"v1"},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
		}
	}
	cfg := func(name string, ca []byte) *admissionregistrationv1.MutatingWebhookConfiguration {
		return &admissionregistrationv1.MutatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Webhooks:   []admissionregistrationv1.MutatingWebhook{webhook("one.example.com", ca), webhook("two.example.com", nil)},
		}
	}
	ca := []byte("-----BEGIN CERTIFICATE-----\nnew\n-----END CERTIFICATE-----\n")
	kube := kubefake.NewClientset(cfg(DefaultWebhookConfiguration, []byte("old")), cfg("other", []byte("old")))
	logger, ctx := ktesting.NewTestContext(t)

	if err := syncCABundle(ctx, kube, DefaultWebhookConfiguration, ca, logger); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]*admissionregistrationv1.MutatingWebhookConfiguration{
		DefaultWebhookConfiguration: {Webhooks: []admissionregistrationv1.MutatingWebhook{webhook("one.example.com", ca), webhook("two.example.com", ca)}},
		"other":                     cfg("other", []byte("old")),
	} {
		got, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want.Webhooks, got.Webhooks); diff != "" {
			t.Errorf("%s: webhooks (-want,+got):\n%s", name, diff)
		}
	}

	kube.ClearActions()
	if err := syncCABundle(ctx, kube, DefaultWebhookConfiguration, ca, logger); err != nil {
		t.Fatal(err)
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() != "get" {
			t.Errorf("a current caBundle was written: %s", a.GetVerb())
		}
	}

	if err := syncCABundle(ctx, kube, "missing", ca, logger); err == nil {
		t.Errorf("no error for a missing configuration")
	}
}
