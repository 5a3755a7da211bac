package injector

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
)

// shutdownGrace bounds how long Run waits for admissions in flight when its
// context ends.
const shutdownGrace = 5 * time.Second

// Server is the pod resource injector: the admission handler, its cache of
// MachineGroups and the certificate it serves.
type Server struct {
	opts    Options
	groups  fleetfitinformers.SharedInformerFactory
	handler *Handler
	certs   certSource
}

// New builds the injector's server; Run starts it. opts are checked with
// Validate; its zero durations take their defaults.
func New(kube kubernetes.Interface, client fleetfitclient.Interface, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	logger := klog.Background().WithName("injector")
	factory := fleetfitinformers.NewSharedInformerFactory(client, 0)
	groups := factory.Fleetfit().V1alpha1().MachineGroups()
	// Register the informer before the factory starts.
	_ = groups.Informer()
	s := &Server{
		opts:    opts,
		groups:  factory,
		handler: NewHandler(groups.Lister(), logger),
	}
	if opts.CertDir != "" {
		src, err := newFileSource(opts.CertDir, logger)
		if err != nil {
			return nil, err
		}
		s.certs = src
	} else {
		s.certs = newRotator(kube, opts, logger)
	}
	return s, nil
}

// Run serves admission until ctx ends. It starts serving once the
// MachineGroup cache has synced and there is a certificate, so that no pod
// is refused for want of either; until then the API server's calls fail and
// guest pods are refused (failurePolicy Fail). It returns an error when it
// cannot listen or serve.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("injector")
	s.handler.logger = logger
	s.groups.Start(ctx.Done())
	defer s.groups.Shutdown()
	for typ, ok := range s.groups.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				// Stopped before it started serving: nothing failed.
				return nil
			}
			return fmt.Errorf("the cache of %v did not sync", typ)
		}
	}
	ready := make(chan struct{})
	certsDone := make(chan struct{})
	certCtx, stopCerts := context.WithCancel(ctx)
	go func() {
		defer close(certsDone)
		s.certs.run(klog.NewContext(certCtx, logger), ready)
	}()
	defer func() {
		stopCerts()
		<-certsDone
	}()
	select {
	case <-ctx.Done():
		return nil
	case <-ready:
	}

	ln := s.opts.Listener
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", s.opts.BindAddress); err != nil {
			return fmt.Errorf("listening for the pod resource injector: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle(Path, s.handler)
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: s.certs.getCertificate,
		},
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	logger.Info("Serving the pod resource injector", "address", ln.Addr().String(), "path", Path)
	select {
	case err := <-served:
		return fmt.Errorf("serving the pod resource injector: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stopping the pod resource injector: %w", err)
	}
	return nil
}
