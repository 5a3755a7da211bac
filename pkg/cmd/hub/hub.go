// Package hub is the fleetfit-hub command: the hub side of fleetfit, which
// runs next to the OCM hub and turns Placements and HPAIntents into
// decisions and deliveries.
package hub

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterscheme "open-cluster-management.io/api/client/cluster/clientset/versioned/scheme"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	sigclient "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cmd"
	"github.com/fleetfit/fleetfit/pkg/controller/action"
	"github.com/fleetfit/fleetfit/pkg/controller/hpaintent"
	"github.com/fleetfit/fleetfit/pkg/controller/labelkeys"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	"github.com/fleetfit/fleetfit/pkg/controller/reschedule"
	"github.com/fleetfit/fleetfit/pkg/controller/sigdecision"
	"github.com/fleetfit/fleetfit/pkg/delivery"
	"github.com/fleetfit/fleetfit/pkg/emco"
	"github.com/fleetfit/fleetfit/pkg/eventlimit"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitscheme "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/scheme"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	"github.com/fleetfit/fleetfit/pkg/version"
)

// Options are the hub's command-line options.
type Options struct {
	Kubeconfig string
	// Placements is "all" (fleetfit is the hub's placement controller) or "annotated" (only
	// Placements with OCM's disable annotation and the fleetfit.io/scheduler label).
	Placements string
	// SIGPlacementDecisions, with Placements "all", mirrors the PlacementDecisions into the
	// SIG-Multicluster PlacementDecision API while the hub serves it, as OCM's placement
	// controller does in its stead (see pkg/controller/sigdecision).
	SIGPlacementDecisions bool
	Workers               int
	// InventoryStaleAfter is how old a ClusterInventory may be before its cluster is no longer
	// chosen anew; StartupGrace how long, after a start, placements with decisions are left
	// as they are.
	InventoryStaleAfter time.Duration
	StartupGrace        time.Duration
	// DeliveryKinds and DeliveryNamespaces are what intents may deliver (see pkg/delivery).
	DeliveryKinds      []string
	DeliveryNamespaces []string
	// QPS and Burst limit the hub's requests on the client side; a negative QPS sets no
	// limit and leaves the pace to the API server's priority and fairness (the default).
	QPS   float32
	Burst int
	// EventQPS and EventBurst bound the rate of Normal events (see pkg/eventlimit); an
	// EventQPS of 0 or less sets no limit.
	EventQPS   float32
	EventBurst int

	LeaderElect          bool
	LeaderElectNamespace string
	LeaseDuration        time.Duration
	RenewDeadline        time.Duration
	RetryPeriod          time.Duration

	Serving *ServingOptions
}

// NewOptions returns the defaults.
func NewOptions() *Options {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = "fleetfit-system"
	}
	return &Options{
		Placements:            string(placementmode.All),
		SIGPlacementDecisions: true,
		Workers:               placement.DefaultWorkers,
		InventoryStaleAfter:   framework.InventoryStaleAfter,
		StartupGrace:          time.Minute,
		DeliveryKinds:         delivery.DefaultKinds,
		QPS:                   -1,
		Burst:                 100,
		EventQPS:              50,
		EventBurst:            100,
		LeaderElect:           true,
		LeaderElectNamespace:  ns,
		LeaseDuration:         15 * time.Second,
		RenewDeadline:         10 * time.Second,
		RetryPeriod:           2 * time.Second,
		Serving:               NewServingOptions(),
	}
}

// NewCommand returns the fleetfit-hub command.
func NewCommand() *cobra.Command {
	o := NewOptions()
	c := &cobra.Command{
		Use:           "fleetfit-hub",
		Short:         "fleetfit's hub: hardware-aware scheduling and delivery of OCM Placements",
		Version:       version.Get().String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context())
		},
	}
	o.AddFlags(c.Flags())
	cmd.AddLogFlags(c)
	return c
}

// AddFlags adds the hub's flags, serving included, to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig of the hub cluster (default: $KUBECONFIG, ~/.kube/config or in-cluster)")
	fs.StringVar(&o.Placements, "placements", o.Placements, "which Placements to schedule: \"all\" (replace OCM's placement controller; Placements with OCM's experimental-scheduling-disable annotation are skipped unless labelled "+placementmode.SchedulerLabel+") or \"annotated\" (run beside OCM's controller; only Placements with that annotation and label)")
	fs.BoolVar(&o.SIGPlacementDecisions, "sig-placement-decisions", o.SIGPlacementDecisions, "with --placements all, mirror every PlacementDecision into the SIG-Multicluster PlacementDecision API (multicluster.x-k8s.io/v1alpha1) whenever its CRD is installed on the hub, as OCM's placement controller does with its SIGPlacementDecision feature; with --placements annotated, OCM's controller keeps doing it")
	fs.IntVar(&o.Workers, "workers", o.Workers, "placements scheduled concurrently; each mostly waits for the API server's answers, so this follows what the API server can take at once, not the hub's CPUs")
	fs.DurationVar(&o.InventoryStaleAfter, "inventory-stale-after", o.InventoryStaleAfter, "how old a cluster's ClusterInventory may be and still make the cluster eligible for new decisions; clusters it already decides keep them however old it is")
	fs.DurationVar(&o.StartupGrace, "startup-grace", o.StartupGrace, "after a start or a leader change, how long to wait before reconsidering, of the hub's own accord, the placements that already decide clusters, so that agents whose reports failed meanwhile (they retry at least every minute) can report first; new placements and any change are handled at once")
	fs.StringSliceVar(&o.DeliveryKinds, "delivery-allowed-kinds", o.DeliveryKinds, "kinds an HPAIntent's workload may deliver, as group/Kind (Kind for the core group); cluster-scoped kinds other than Namespace are never delivered, and OCM's work agent applies each object only as far as the ServiceAccount "+delivery.ExecutorServiceAccount+" of the intent's namespace on the managed cluster may")
	fs.StringSliceVar(&o.DeliveryNamespaces, "delivery-allowed-namespaces", nil, "namespaces, besides its own, that an HPAIntent's workload may deliver objects into")
	fs.Float32Var(&o.QPS, "kube-api-qps", o.QPS, "queries per second to the hub API server; a negative value sets no client-side limit and leaves the pace to the API server's priority and fairness, which queues requests or answers 429 with Retry-After (deploy/hub's FlowSchema gives fleetfit-hub the priority level workload-high)")
	fs.IntVar(&o.Burst, "kube-api-burst", o.Burst, "burst of queries to the hub API server, with a positive --kube-api-qps")
	fs.Float32Var(&o.EventQPS, "event-qps", o.EventQPS, "Normal events recorded per second at most (as kubelet's --event-qps); beyond it they are dropped and counted in fleetfit_events_dropped_total, so that a burst of new placements does not spend the API server's writes on events; Warning events are always recorded; 0 or less sets no limit")
	fs.IntVar(&o.EventBurst, "event-burst", o.EventBurst, "burst of Normal events, with a positive --event-qps")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect, "elect a leader among hub replicas with a Lease; only the leader schedules")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace, "namespace of the leader election Lease (default: $POD_NAMESPACE or fleetfit-system)")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "how long a non-leader waits before taking over an unrenewed lease")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "how long the leader retries renewing before giving up leadership")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "time between leader election attempts")
	o.Serving.AddFlags(fs)
}

// Validate checks the options.
func (o *Options) Validate() error {
	if _, err := placementmode.ParseMode(o.Placements); err != nil {
		return fmt.Errorf("--placements %w", err)
	}
	if o.QPS == 0 {
		return fmt.Errorf("--kube-api-qps must not be 0: give a rate, or a negative value for none on the client side")
	}
	if o.QPS > 0 && o.Burst < 1 {
		return fmt.Errorf("--kube-api-burst must be at least 1 with --kube-api-qps %v", o.QPS)
	}
	if o.EventQPS > 0 && o.EventBurst < 1 {
		return fmt.Errorf("--event-burst must be at least 1 with --event-qps %v", o.EventQPS)
	}
	if o.Workers < 1 {
		return fmt.Errorf("--workers must be at least 1")
	}
	if o.InventoryStaleAfter <= 0 {
		return fmt.Errorf("--inventory-stale-after must be positive, not %s", o.InventoryStaleAfter)
	}
	if _, err := delivery.NewPolicy(o.DeliveryKinds, o.DeliveryNamespaces); err != nil {
		return fmt.Errorf("--delivery-allowed-kinds/--delivery-allowed-namespaces: %w", err)
	}
	if o.StartupGrace < 0 {
		return fmt.Errorf("--startup-grace must not be negative, not %s", o.StartupGrace)
	}
	return nil
}

// Run connects to the hub, checks that the APIs fleetfit needs are served, serves explain and
// metrics, and schedules Placements (as the leader, when leader election is on) until ctx ends.
func (o *Options) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	cfg, err := cmd.RESTConfig(o.Kubeconfig, "fleetfit-hub")
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("connecting to the hub %s: %w", cfg.Host, err)
	}
	if err := RequireAPIs(cfg.Host, dc); err != nil {
		return err
	}
	logger.Info("Hub APIs served", "host", cfg.Host, "version", version.Get().GitVersion)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst

	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	clusterClient, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	fleetfitClient, err := fleetfitclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	workClient, err := workclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ocmInformers := clusterinformers.NewSharedInformerFactory(clusterClient, 0)
	var sigDecisions *sigdecision.Watcher
	if o.SIGPlacementDecisions && placementmode.Mode(o.Placements) == placementmode.All {
		if sigDecisions, err = newSIGDecisionWatcher(cfg, ocmInformers); err != nil {
			return err
		}
	}
	workInformers := workinformers.NewSharedInformerFactory(workClient, 0)
	fleetfitInformers := fleetfitinformers.NewSharedInformerFactory(fleetfitClient, 0)

	reg := prometheus.NewRegistry()
	// Go's and the process's metrics, and the work queues' (workqueue_depth,
	// workqueue_queue_duration_seconds, ... by queue name, as kube-controller-manager exports
	// them), come from component-base's registry, which /metrics serves beside this one.
	metrics := placement.NewMetrics(reg)
	h := scheduler.NewHandle(clock.RealClock{}, ocmInformers.Cluster().V1alpha1().AddOnPlacementScores().Lister())
	sched, err := scheduler.New(h, plugins.NewRegistry(), plugins.DefaultProfile())
	if err != nil {
		return err
	}
	sched.WithObserver(metrics)

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: kube.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	defer broadcaster.Shutdown()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clusterscheme.AddToScheme, fleetfitscheme.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	recorder, err := eventlimit.New(broadcaster.NewRecorder(scheme, "fleetfit-hub"), o.EventQPS, o.EventBurst, reg)
	if err != nil {
		return err
	}

	schedCache := cache.New()
	schedCache.SetInventoryStaleAfter(o.InventoryStaleAfter)
	ctrl, err := placement.New(placement.Clients{Cluster: clusterClient, Fleetfit: fleetfitClient, Recorder: recorder}, ocmInformers, fleetfitInformers, sched, schedCache, placement.Options{
		Mode: placementmode.Mode(o.Placements), Workers: o.Workers, Metrics: metrics, StartupGrace: o.StartupGrace,
	})
	if err != nil {
		return err
	}
	if err := ctrl.RegisterFleetMetrics(reg); err != nil {
		return err
	}
	policy, err := delivery.NewPolicy(o.DeliveryKinds, o.DeliveryNamespaces)
	if err != nil {
		return err
	}
	validator, err := hpaintent.New(fleetfitClient, recorder, ocmInformers, fleetfitInformers, hpaintent.Options{Delivery: policy})
	if err != nil {
		return err
	}
	labelKeys, err := labelkeys.New(fleetfitClient, fleetfitInformers, labelkeys.Options{})
	if err != nil {
		return err
	}
	delivery, err := action.New(action.Clients{Work: workClient, Fleetfit: fleetfitClient, Recorder: recorder},
		ocmInformers, workInformers, fleetfitInformers, schedCache, action.Options{Delivery: policy})
	if err != nil {
		return err
	}
	// It decides moves away from clusters where an intent's pods stay unschedulable, with a dry
	// run of the placement's cycle on the same scheduler and cache.
	rescheduler, err := reschedule.New(reschedule.Clients{Fleetfit: fleetfitClient, Recorder: recorder}, ocmInformers, fleetfitInformers,
		sched, schedCache, reschedule.Options{Metrics: reschedule.NewMetrics(reg), StartupGrace: o.StartupGrace})
	if err != nil {
		return err
	}
	ocmInformers.Start(ctx.Done())
	workInformers.Start(ctx.Done())
	fleetfitInformers.Start(ctx.Done())
	defer ocmInformers.Shutdown()
	defer workInformers.Shutdown()
	defer fleetfitInformers.Shutdown()

	kubeconfigPath := o.Kubeconfig
	if kubeconfigPath == "" {
		kubeconfigPath = os.Getenv("KUBECONFIG")
	}
	// EMCO's API reads and writes through the hub API server only, so every
	// replica serves it, leader or not.
	emcoClients := emco.Clients{Kube: kube, Fleetfit: fleetfitClient, Cluster: clusterClient}
	if err := o.Serving.serve(ctx, kubeconfigPath, ctrl, emcoClients, reg); err != nil {
		return err
	}

	run := func(ctx context.Context) {
		var wg sync.WaitGroup
		wg.Go(func() { validator.Run(ctx) })
		wg.Go(func() { labelKeys.Run(ctx) })
		wg.Go(func() { delivery.Run(ctx) })
		wg.Go(func() { ctrl.Run(ctx) })
		wg.Go(func() { rescheduler.Run(ctx) })
		if sigDecisions != nil {
			wg.Go(func() { sigDecisions.Run(ctx) })
		}
		wg.Wait()
	}
	if !o.LeaderElect {
		run(ctx)
		return nil
	}
	id, err := os.Hostname()
	if err != nil {
		return err
	}
	id += "_" + string(uuid.NewUUID())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: o.LeaderElectNamespace, Name: "fleetfit-hub"},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            "fleetfit-hub",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				logger.Info("Started leading", "identity", id)
				run(ctx)
			},
			OnStoppedLeading: func() { logger.Info("Stopped leading", "identity", id) },
		},
	})
	return nil
}

// newSIGDecisionWatcher returns the watcher that mirrors decisions into the SIG-Multicluster
// API whenever the hub serves it; its informer on PlacementDecisions joins ocm's before they
// start.
func newSIGDecisionWatcher(cfg *rest.Config, ocm clusterinformers.SharedInformerFactory) (*sigdecision.Watcher, error) {
	apiext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	sig, err := sigclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ocm.Cluster().V1beta1().PlacementDecisions().Informer()
	return sigdecision.NewWatcher(apiext, sig, ocm), nil
}

// requiredAPIs are the group versions and resources the hub works with, in
// the order they are checked.
var requiredAPIs = []struct {
	groupVersion string
	resources    []string
}{
	{v1alpha1.SchemeGroupVersion.String(), []string{"hpaintents", "clusterinventories"}},
	{"cluster.open-cluster-management.io/v1", []string{"managedclusters"}},
	{"cluster.open-cluster-management.io/v1beta1", []string{"placements", "placementdecisions"}},
	{"cluster.open-cluster-management.io/v1beta2", []string{"managedclustersets", "managedclustersetbindings"}},
	{"cluster.open-cluster-management.io/v1alpha1", []string{"addonplacementscores"}},
	{"work.open-cluster-management.io/v1", []string{"manifestworks"}},
}

// RequireAPIs fails with an actionable message when the hub does not serve
// an API fleetfit needs.
func RequireAPIs(host string, dc discovery.DiscoveryInterface) error {
	for _, api := range requiredAPIs {
		gv, resources := api.groupVersion, api.resources
		list, err := dc.ServerResourcesForGroupVersion(gv)
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("hub %s does not serve %s: install the CRDs with `fleetfit install crds --side hub`", host, gv)
		case apierrors.IsUnauthorized(err):
			return fmt.Errorf("hub %s does not accept the credentials of the kubeconfig (%v): check --kubeconfig", host, err)
		case apierrors.IsForbidden(err):
			return fmt.Errorf("hub %s forbids reading its API discovery to this identity (%v): grant it fleetfit-hub's RBAC (deploy/hub)", host, err)
		case err != nil:
			return fmt.Errorf("cannot read the APIs of the hub %s (is it reachable?): %w", host, err)
		}
		served := map[string]bool{}
		for _, r := range list.APIResources {
			served[r.Name] = true
		}
		for _, r := range resources {
			if !served[r] {
				return fmt.Errorf("hub %s does not serve %s in %s: install the CRDs with `fleetfit install crds --side hub`", host, r, gv)
			}
		}
	}
	return nil
}
