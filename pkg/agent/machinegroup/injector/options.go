package injector

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults of Options, matching deploy/agent's manifests.
const (
	DefaultBindAddress          = ":9443"
	DefaultWebhookConfiguration = "fleetfit-agent-injector"
	DefaultNamespace            = "fleetfit-agent"
	DefaultService              = "fleetfit-agent-injector"
)

// Names of the objects the agent keeps its certificates in, in
// Options.Namespace, when it manages them itself (no CertDir).
const (
	// SignerSecret holds the self-signed CA that signs the serving
	// certificate; it is replaced well before it expires.
	SignerSecret = "fleetfit-agent-injector-signer"
	// CABundleConfigMap holds, under ca-bundle.crt, every CA that signed a
	// serving certificate still valid: the current signer and, after a
	// rotation, the previous ones until they expire. The webhook
	// configuration's caBundle is a copy of it.
	CABundleConfigMap = "fleetfit-agent-injector-ca"
	// ServingSecret holds the webhook's serving certificate and key.
	ServingSecret = "fleetfit-agent-injector-serving-cert"
)

// Lifetimes of the certificates the agent manages, and how often it checks
// them and the webhook configuration's caBundle.
const (
	DefaultSignerValidity  = 365 * 24 * time.Hour
	DefaultServingValidity = 30 * 24 * time.Hour
	DefaultResyncInterval  = time.Minute
)

// Options configure the pod resource injector's webhook server.
type Options struct {
	// BindAddress is the host:port the webhook listens on over TLS.
	BindAddress string
	// WebhookConfiguration names the MutatingWebhookConfiguration whose
	// caBundle the agent keeps equal to its CA bundle.
	WebhookConfiguration string
	// Namespace is the agent's namespace: where the Service is and where the
	// certificates' Secrets and ConfigMap are kept.
	Namespace string
	// Service is the Service in front of the webhook; the serving
	// certificate is for its DNS names.
	Service string
	// CertDir, when set, holds tls.crt and tls.key, a serving certificate
	// that someone else provides (a mounted Secret, cert-manager): the
	// agent serves it, reloads it when the files change, and leaves the
	// webhook configuration's caBundle to whoever issued it. When empty,
	// the agent issues and rotates its own (see SignerSecret).
	CertDir string
	// ExtraHostnames are DNS names or IP addresses the managed serving
	// certificate is for besides the Service's.
	ExtraHostnames []string

	// The following are not flags.

	// Listener, when not nil, is used instead of listening on BindAddress.
	Listener net.Listener
	// SignerValidity and ServingValidity are the lifetimes of the managed
	// certificates; each is replaced once 80% of it has passed. Zero means
	// the default.
	SignerValidity, ServingValidity time.Duration
	// ResyncInterval is how often the certificates and the caBundle are
	// checked without an event; zero means DefaultResyncInterval.
	ResyncInterval time.Duration
}

// NewOptions returns the defaults.
func NewOptions() Options {
	return Options{
		BindAddress:          DefaultBindAddress,
		WebhookConfiguration: DefaultWebhookConfiguration,
		Namespace:            DefaultNamespace,
		Service:              DefaultService,
	}
}

// AddFlags adds the injector's flags, prefixed --injector-.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.BindAddress, "injector-bind-address", o.BindAddress, "host:port the pod resource injector's webhook listens on (TLS)")
	fs.StringVar(&o.WebhookConfiguration, "injector-webhook-configuration", o.WebhookConfiguration, "MutatingWebhookConfiguration whose caBundle the agent keeps in sync with its serving certificate's CA")
	fs.StringVar(&o.Namespace, "injector-namespace", o.Namespace, "namespace of the injector's Service and of the Secrets and ConfigMap holding its certificates")
	fs.StringVar(&o.Service, "injector-service", o.Service, "Service in front of the injector's webhook; the serving certificate is for its DNS names")
	fs.StringVar(&o.CertDir, "injector-cert-dir", o.CertDir, "directory with tls.crt and tls.key to serve, reloaded when they change; the webhook configuration's caBundle is then left alone (default: the agent issues and rotates its own certificate)")
	fs.StringSliceVar(&o.ExtraHostnames, "injector-cert-hostnames", o.ExtraHostnames, "more DNS names or IP addresses for the agent's own serving certificate")
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.Listener == nil {
		if _, _, err := net.SplitHostPort(o.BindAddress); err != nil {
			errs = append(errs, fmt.Errorf("--injector-bind-address %q: %w", o.BindAddress, err))
		}
	}
	if o.CertDir == "" {
		if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--injector-namespace %q: %v", o.Namespace, msgs))
		}
		if msgs := validation.IsDNS1123Label(o.Service); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--injector-service %q: %v", o.Service, msgs))
		}
		if msgs := validation.IsDNS1123Subdomain(o.WebhookConfiguration); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--injector-webhook-configuration %q: %v", o.WebhookConfiguration, msgs))
		}
		for _, h := range o.ExtraHostnames {
			if net.ParseIP(h) == nil && len(validation.IsDNS1123Subdomain(h)) > 0 {
				errs = append(errs, fmt.Errorf("--injector-cert-hostnames: %q is neither an IP address nor a DNS name", h))
			}
		}
	}
	if o.SignerValidity < 0 || o.ServingValidity < 0 || o.ResyncInterval < 0 {
		errs = append(errs, fmt.Errorf("validities and resync interval must not be negative: %v, %v, %v", o.SignerValidity, o.ServingValidity, o.ResyncInterval))
	}
	return errors.Join(errs...)
}

// hostnames are the names the managed serving certificate is for: the
// Service's, as the API server calls it, and ExtraHostnames.
func (o *Options) hostnames() []string {
	svc := o.Service + "." + o.Namespace + ".svc"
	return append([]string{svc, svc + ".cluster.local"}, o.ExtraHostnames...)
}

func (o *Options) withDefaults() Options {
	c := *o
	if c.SignerValidity == 0 {
		c.SignerValidity = DefaultSignerValidity
	}
	if c.ServingValidity == 0 {
		c.ServingValidity = DefaultServingValidity
	}
	if c.ResyncInterval == 0 {
		c.ResyncInterval = DefaultResyncInterval
	}
	return c
}
