package framework

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/injector"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// InjectorWebhookConfiguration is deploy/agent's MutatingWebhookConfiguration
// for the pod resource injector, changed only to call url instead of the
// agent's Service, which a control plane without a cluster network cannot
// reach. Its caBundle is left to the agent.
func InjectorWebhookConfiguration(url string) (*admissionregistrationv1.MutatingWebhookConfiguration, error) {
	objs, err := install.Decode(deployagent.Injector)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.GetKind() != "MutatingWebhookConfiguration" {
			continue
		}
		raw, err := o.MarshalJSON()
		if err != nil {
			return nil, err
		}
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if _, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, cfg); err != nil {
			return nil, err
		}
		for i := range cfg.Webhooks {
			cfg.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
		}
		return cfg, nil
	}
	return nil, errors.New("deploy/agent has no MutatingWebhookConfiguration")
}

// RegisterInjector points spoke's webhook configuration for the pod resource
// injector at an agent serving on addr (host:port), creating or replacing it.
func RegisterInjector(ctx context.Context, spoke *ControlPlane, addr string) error {
	cfg, err := InjectorWebhookConfiguration("https://" + addr + injector.Path)
	if err != nil {
		return err
	}
	client := spoke.AdminClient().AdmissionregistrationV1().MutatingWebhookConfigurations()
	// Another writer (OCM's work agent applying the add-on's manifests) may create it at the
	// same time: replace whatever is there, retrying on conflicts, rather than delete and
	// create, which that writer can come between.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		old, err := client.Get(ctx, cfg.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = client.Create(ctx, cfg, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(admissionregistrationv1.Resource("mutatingwebhookconfigurations"), cfg.Name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		want := cfg.DeepCopy()
		want.ResourceVersion = old.ResourceVersion
		_, err = client.Update(ctx, want, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("creating or replacing webhook configuration %s: %w", cfg.Name, err)
	}
	return nil
}
