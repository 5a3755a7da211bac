package injector

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openshift/library-go/pkg/operator/certrotation"
	"github.com/openshift/library-go/pkg/operator/events"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"
)

// certSource gives the TLS server its current certificate.
type certSource interface {
	// run keeps the certificate current until ctx ends; ready is closed
	// once there is a certificate to serve.
	run(ctx context.Context, ready chan<- struct{})
	getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// errorRetry is how soon a failed rotation or caBundle update is tried again.
const errorRetry = 5 * time.Second

// rotator issues and rotates the serving certificate with library-go's
// certrotation, as OCM's components do for their webhooks: a self-signed CA
// in SignerSecret, the bundle of CAs to trust in CABundleConfigMap, and the
// serving certificate signed by the current CA in ServingSecret, all in the
// agent's namespace. A new CA is added to the bundle before anything it
// signs is served, and old CAs stay in the bundle until they expire, so the
// API server trusts the served certificate throughout a rotation as soon as
// the caBundle is in place. After each check it copies the bundle into
// every webhook of the webhook configuration, patching only caBundle.
type rotator struct {
	kube    kubernetes.Interface
	opts    Options
	logger  klog.Logger
	factory informers.SharedInformerFactory

	signer certrotation.RotatedSigningCASecret
	bundle certrotation.CABundleConfigMap
	target certrotation.RotatedSelfSignedCertKeySecret

	kick    chan struct{}
	current atomic.Pointer[tls.Certificate]
	// servedPEM is the certificate and key current was parsed from.
	servedPEM []byte
}

func newRotator(kube kubernetes.Interface, opts Options, logger klog.Logger) *rotator {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(opts.Namespace))
	secrets := factory.Core().V1().Secrets()
	configMaps := factory.Core().V1().ConfigMaps()
	owner := certrotation.AdditionalAnnotations{
		JiraComponent: "fleetfit-agent",
		Description:   "Serving certificate of fleetfit-agent's pod resource injector webhook",
	}
	r := &rotator{kube: kube, opts: opts, logger: logger, factory: factory, kick: make(chan struct{}, 1)}
	recorder := &logRecorder{logger: &r.logger, component: "fleetfit-agent-injector"}
	r.signer = certrotation.RotatedSigningCASecret{
		Namespace: opts.Namespace, Name: SignerSecret,
		Validity: opts.SignerValidity, Refresh: refreshAfter(opts.SignerValidity),
		AdditionalAnnotations: owner,
		Informer:              secrets, Lister: secrets.Lister(), Client: kube.CoreV1(), EventRecorder: recorder,
	}
	r.bundle = certrotation.CABundleConfigMap{
		Namespace: opts.Namespace, Name: CABundleConfigMap,
		AdditionalAnnotations: owner,
		Informer:              configMaps, Lister: configMaps.Lister(), Client: kube.CoreV1(), EventRecorder: recorder,
	}
	r.target = certrotation.RotatedSelfSignedCertKeySecret{
		Namespace: opts.Namespace, Name: ServingSecret,
		Validity: opts.ServingValidity, Refresh: refreshAfter(opts.ServingValidity),
		AdditionalAnnotations: owner,
		CertCreator:           &certrotation.ServingRotation{Hostnames: opts.hostnames},
		Informer:              secrets, Lister: secrets.Lister(), Client: kube.CoreV1(), EventRecorder: recorder,
	}
	mine := func(obj any) bool {
		m, err := metaOf(obj)
		return err == nil && (m.GetName() == SignerSecret || m.GetName() == CABundleConfigMap || m.GetName() == ServingSecret)
	}
	handler := cache.FilteringResourceEventHandler{
		FilterFunc: mine,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { r.enqueue() },
			UpdateFunc: func(any, any) { r.enqueue() },
			DeleteFunc: func(any) { r.enqueue() },
		},
	}
	// Errors only when the informer has stopped, which it has not yet.
	_, _ = secrets.Informer().AddEventHandler(handler)
	_, _ = configMaps.Informer().AddEventHandler(handler)
	return r
}

// refreshAfter is when a certificate of this lifetime is replaced: after 80%
// of it, which leaves the last fifth for the replacement to reach everyone.
func refreshAfter(validity time.Duration) time.Duration {
	return validity / 5 * 4
}

func metaOf(obj any) (metav1.Object, error) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	switch o := obj.(type) {
	case *corev1.Secret:
		return o, nil
	case *corev1.ConfigMap:
		return o, nil
	}
	return nil, fmt.Errorf("unexpected %T", obj)
}

func (r *rotator) enqueue() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *rotator) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := r.current.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("the pod resource injector has no serving certificate yet")
}

func (r *rotator) run(ctx context.Context, ready chan<- struct{}) {
	// Only this goroutine logs through r.logger from now on.
	r.logger = klog.FromContext(ctx)
	r.factory.Start(ctx.Done())
	defer r.factory.Shutdown()
	for typ, ok := range r.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			r.logger.Error(nil, "Cache did not sync", "type", typ)
			return
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
		case <-timer.C:
		}
		next := r.opts.ResyncInterval
		if err := r.sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			r.logger.Error(err, "Rotating the injector's serving certificate", "retryIn", errorRetry)
			next = errorRetry
		}
		if ready != nil && r.current.Load() != nil {
			close(ready)
			ready = nil
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

// sync makes sure of the CA, the bundle and the serving certificate, serves
// the latter and puts the bundle into the webhook configuration. An update
// that lost a race returns nothing from certrotation; the event of the
// winning write brings the next sync.
func (r *rotator) sync(ctx context.Context) error {
	ca, _, err := r.signer.EnsureSigningCertKeyPair(ctx)
	if err != nil || ca == nil {
		return errors.Join(errors.New("ensuring the signing CA"), err)
	}
	location := r.target.Namespace + "/" + r.target.Name
	bundle, err := r.bundle.EnsureConfigMapCABundle(ctx, ca, location)
	if err != nil || bundle == nil {
		return errors.Join(errors.New("ensuring the CA bundle"), err)
	}
	secret, err := r.target.EnsureTargetCertKeyPair(ctx, ca, bundle)
	if err != nil || secret == nil {
		return errors.Join(errors.New("ensuring the serving certificate"), err)
	}
	if err := r.serve(secret); err != nil {
		return err
	}
	var caPEM []byte
	for _, c := range bundle {
		b, err := cert.EncodeCertificates(c)
		if err != nil {
			return err
		}
		caPEM = append(caPEM, b...)
	}
	return syncCABundle(ctx, r.kube, r.opts.WebhookConfiguration, caPEM, r.logger)
}

// serve makes secret's certificate the one served, unless it already is.
func (r *rotator) serve(secret *corev1.Secret) error {
	crt, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
	pem := append(append([]byte{}, crt...), key...)
	if r.current.Load() != nil && bytes.Equal(pem, r.servedPEM) {
		return nil
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return fmt.Errorf("reading the serving certificate of Secret %s/%s: %w", secret.Namespace, secret.Name, err)
	}
	r.servedPEM = pem
	r.current.Store(&pair)
	r.logger.Info("Serving certificate loaded", "secret", klog.KObj(secret), "notAfter", pair.Leaf.NotAfter)
	return nil
}

// syncCABundle sets caBundle in every webhook of the named
// MutatingWebhookConfiguration to caPEM, patching that field alone (a
// strategic merge patch keyed by the webhooks' names) and only when one
// differs.
func syncCABundle(ctx context.Context, kube kubernetes.Interface, name string, caPEM []byte, logger klog.Logger) error {
	cfg, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading MutatingWebhookConfiguration %s: %w", name, err)
	}
	type clientConfig struct {
		CABundle []byte `json:"caBundle"`
	}
	type webhook struct {
		Name         string       `json:"name"`
		ClientConfig clientConfig `json:"clientConfig"`
	}
	var hooks []webhook
	stale := false
	for _, w := range cfg.Webhooks {
		stale = stale || !bytes.Equal(w.ClientConfig.CABundle, caPEM)
		hooks = append(hooks, webhook{Name: w.Name, ClientConfig: clientConfig{CABundle: caPEM}})
	}
	if !stale {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"webhooks": hooks})
	if err != nil {
		return err
	}
	if _, err := kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patching the caBundle of MutatingWebhookConfiguration %s: %w", name, err)
	}
	logger.Info("Updated the webhook configuration's caBundle", "mutatingWebhookConfiguration", name, "webhooks", len(hooks))
	return nil
}

// logRecorder logs certrotation's events, one line each, instead of
// recording Events: they say what was created or replaced and why. logger
// is the rotator's, which run replaces with its context's.
type logRecorder struct {
	logger    *klog.Logger
	component string
}

var _ events.Recorder = (*logRecorder)(nil)

func (r *logRecorder) Event(reason, message string) {
	r.logger.Info("Certificate rotation", "reason", reason, "message", message)
}

func (r *logRecorder) Eventf(reason, messageFmt string, args ...any) {
	r.Event(reason, fmt.Sprintf(messageFmt, args...))
}

func (r *logRecorder) Warning(reason, message string) {
	r.logger.Info("Certificate rotation warning", "reason", reason, "message", message)
}

func (r *logRecorder) Warningf(reason, messageFmt string, args ...any) {
	r.Warning(reason, fmt.Sprintf(messageFmt, args...))
}

func (r *logRecorder) ForComponent(name string) events.Recorder {
	return &logRecorder{logger: r.logger, component: name}
}

func (r *logRecorder) WithComponentSuffix(suffix string) events.Recorder {
	return r.ForComponent(r.component + "-" + suffix)
}

func (r *logRecorder) WithContext(context.Context) events.Recorder { return r }

func (r *logRecorder) ComponentName() string { return r.component }

func (r *logRecorder) Shutdown() {}

// fileSource serves tls.crt and tls.key of a directory, reloaded when they
// change.
type fileSource struct {
	content *dynamiccertificates.DynamicCertKeyPairContent
	logger  klog.Logger

	mu      sync.Mutex
	loaded  []byte
	current *tls.Certificate
}

func newFileSource(dir string, logger klog.Logger) (*fileSource, error) {
	content, err := dynamiccertificates.NewDynamicServingContentFromFiles("fleetfit-agent-injector",
		filepath.Join(dir, corev1.TLSCertKey), filepath.Join(dir, corev1.TLSPrivateKeyKey))
	if err != nil {
		return nil, fmt.Errorf("reading the injector's serving certificate from %s: %w", dir, err)
	}
	return &fileSource{content: content, logger: logger}, nil
}

func (f *fileSource) run(ctx context.Context, ready chan<- struct{}) {
	close(ready)
	f.content.Run(ctx, 1)
}

func (f *fileSource) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	crt, key := f.content.CurrentCertKeyContent()
	pem := append(append([]byte{}, crt...), key...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current != nil && bytes.Equal(pem, f.loaded) {
		return f.current, nil
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return nil, fmt.Errorf("the injector's serving certificate: %w", err)
	}
	f.loaded, f.current = pem, &pair
	f.logger.Info("Serving certificate loaded", "name", f.content.Name(), "notAfter", pair.Leaf.NotAfter)
	return f.current, nil
}
