package hub

import (
	"context"
	"fmt"
	"net"
	"net/http"
	goruntime "runtime"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	apimux "k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fleetfit/fleetfit/pkg/allocationcandidates"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	"github.com/fleetfit/fleetfit/pkg/emco"
	"github.com/fleetfit/fleetfit/pkg/hubauth"
)

// ServingOptions configure the hub's HTTPS endpoint: explain and dry-run under
// /debug/placements/, allocation candidates under /allocation_candidates, EMCO's HPA intent
// API under /v2/, Prometheus metrics under /metrics, Go's profiles under /debug/pprof/
// (--profiling), and /healthz. Callers of all but /healthz pass one door (package hubauth):
// they are authenticated by the hub API server (client certificates and TokenReview) and
// authorised with SubjectAccessReviews, as kube-scheduler's secure port does.
type ServingOptions struct {
	SecureServing  *options.SecureServingOptions
	Authentication *options.DelegatingAuthenticationOptions
	Authorization  *options.DelegatingAuthorizationOptions
	// Profiling serves Go's pprof profiles under /debug/pprof/ to callers allowed "get" on
	// that path (nonResourceURLs), as kube-scheduler's --profiling does; ContentionProfiling
	// also records where goroutines block.
	Profiling           bool
	ContentionProfiling bool
	// AllocationCandidates bound the work of /allocation_candidates.
	AllocationCandidates allocationcandidates.HandlerOptions
}

// NewServingOptions returns the defaults: port 9443 with a self-signed certificate.
func NewServingOptions() *ServingOptions {
	s := &ServingOptions{
		SecureServing:        options.NewSecureServingOptions(),
		Authentication:       options.NewDelegatingAuthenticationOptions(),
		Authorization:        options.NewDelegatingAuthorizationOptions(),
		AllocationCandidates: allocationcandidates.DefaultHandlerOptions(),
	}
	s.SecureServing.BindPort = 9443
	s.SecureServing.ServerCert.PairName = "fleetfit-hub"
	s.Profiling = true
	return s
}

// AddFlags adds the serving flags.
func (s *ServingOptions) AddFlags(fs *pflag.FlagSet) {
	s.SecureServing.AddFlags(fs)
	s.Authentication.AddFlags(fs)
	s.Authorization.AddFlags(fs)
	fs.BoolVar(&s.Profiling, "profiling", s.Profiling, "serve Go's pprof profiles at /debug/pprof/ on the secure port, to callers allowed to get that path")
	fs.IntVar(&s.AllocationCandidates.Limits.MaxCandidates, "candidates-max", s.AllocationCandidates.Limits.MaxCandidates, "the most candidates an /allocation_candidates answer holds; without a limit, or with a larger one, the answer is cut there and says so")
	fs.Int64Var(&s.AllocationCandidates.Limits.WorkBudget, "candidates-work-budget", s.AllocationCandidates.Limits.WorkBudget, "the most search steps one /allocation_candidates query may take (about 20,000,000 a second of one core); a query that needs more is answered 400")
	fs.IntVar(&s.AllocationCandidates.MaxConcurrent, "candidates-concurrency", s.AllocationCandidates.MaxConcurrent, "how many /allocation_candidates queries are searched at once, each on up to --candidates-parallelism cores; others wait for their turn")
	fs.IntVar(&s.AllocationCandidates.Limits.Parallelism, "candidates-parallelism", s.AllocationCandidates.Limits.Parallelism, "how many clusters one /allocation_candidates query searches at once")
	fs.DurationVar(&s.AllocationCandidates.Timeout, "candidates-timeout", s.AllocationCandidates.Timeout, "how long an /allocation_candidates query may take, its wait for a turn included; beyond it the search stops and the answer is 503")
	fs.BoolVar(&s.ContentionProfiling, "contention-profiling", s.ContentionProfiling, "with --profiling, also record where goroutines block on locks and channels")
}

// serve starts the HTTPS server and returns once it listens; it stops when ctx ends.
func (s *ServingOptions) serve(ctx context.Context, kubeconfig string, ctrl *placement.Controller, emcoClients emco.Clients, reg *prometheus.Registry) error {
	if s.SecureServing.BindPort == 0 && s.SecureServing.Listener == nil {
		return nil
	}
	if err := s.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return fmt.Errorf("creating a self-signed serving certificate: %w", err)
	}
	var serving *server.SecureServingInfo
	if err := s.SecureServing.ApplyTo(&serving); err != nil {
		return err
	}
	s.Authentication.RemoteKubeConfigFile = kubeconfig
	s.Authorization.RemoteKubeConfigFile = kubeconfig
	var authn server.AuthenticationInfo
	if err := s.Authentication.ApplyTo(&authn, serving, nil); err != nil {
		return fmt.Errorf("delegated authentication: %w", err)
	}
	var authz server.AuthorizationInfo
	if err := s.Authorization.ApplyTo(&authz); err != nil {
		return fmt.Errorf("delegated authorization: %w", err)
	}

	// Every endpoint but /healthz is behind one door: a caller without credentials gets 401,
	// one without the right 403 naming the verb and resource, both as a metav1.Status.
	door := hubauth.New(authn.Authenticator, authz.Authorizer)
	// A path that is no resource needs its method on the path (RBAC's nonResourceURLs), as
	// on the Kubernetes API server.
	onPath := func(r *http.Request) hubauth.Access {
		return hubauth.Access{Verb: strings.ToLower(r.Method), Path: r.URL.Path}
	}
	endpoints := http.NewServeMux()
	metrics := prometheus.Gatherers{reg, legacyregistry.DefaultGatherer}
	endpoints.Handle("/metrics", door.Require(promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}), onPath))
	if s.Profiling {
		profiles := apimux.NewPathRecorderMux("fleetfit-hub-profiling")
		routes.Profiling{}.Install(profiles)
		endpoints.Handle("/debug/pprof/", door.Require(profiles, onPath))
		if s.ContentionProfiling {
			goruntime.SetBlockProfileRate(1)
		}
	}
	// Explain and dry-run need rights on the placement they read, or the one posted.
	endpoints.Handle(placement.DebugPath, ctrl.DebugHandler(door))
	// EMCO's API needs rights on the project's hpaintents; then it acts as the hub.
	endpoints.Handle(emco.BasePath, emco.New(emcoClients, door))
	// Allocation candidates need "list" on managedclusters.
	endpoints.Handle(allocationcandidates.Path, allocationcandidates.Handler(ctrl.Fleet, door, s.AllocationCandidates))

	mux := http.NewServeMux()
	// /healthz answers anyone, as a liveness probe comes without credentials. It fails when the
	// scheduler is stuck (placements wait and no cycle finishes), so that the probe restarts it;
	// an idle scheduler, or a replica that is not the leader, is healthy.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ctrl.Healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	mux.Handle("/", door.Authenticate(endpoints))
	resolver := &apirequest.RequestInfoFactory{APIPrefixes: nil, GrouplessAPIPrefixes: nil}

	var handler http.Handler = mux
	handler = genericapifilters.WithRequestInfo(handler, resolver)
	handler = genericfilters.WithPanicRecovery(handler, resolver)
	_, _, err := serving.Serve(handler, 0, ctx.Done())
	return err
}
