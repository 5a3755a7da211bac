// Package placement is fleetfit's placement controller: it schedules OCM Placements with the
// scheduler in pkg/scheduler and writes PlacementDecisions and Placement status exactly where
// and how OCM's placement controller does, so consumers of decisions work unchanged.
package placement

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterlisterv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterlisterv1beta2 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// DefaultWorkers is how many placements are scheduled at once by default. A cycle takes
// well under a millisecond to a few milliseconds of CPU, its writes several API round trips,
// so workers mostly wait on the API server: there must be enough of them to keep its write
// pipeline full, not as many as the hub has CPUs. Beyond that the API server's priority and
// fairness paces them (the hub sets no client-side rate limit by default).
const DefaultWorkers = 16

// Options configure the controller.
type Options struct {
	Mode placementmode.Mode
	// Workers is how many placements are scheduled at once (DefaultWorkers when 0).
	Workers int
	Clock   clock.Clock
	Metrics *Metrics
	// ReservationTimeout is how long capacity promised to a new decision is held when the
	// cluster's inventory does not show it used (default 5 minutes).
	ReservationTimeout time.Duration
	// StartupGrace is how long after its caches are synced the controller waits before it
	// reconsiders, of its own accord, the placements that already decide clusters, so that
	// agents whose reports failed while the hub was away (they retry at least every minute)
	// can speak first. New placements, and changes that arrive meanwhile, are handled at once.
	// Zero means no grace.
	StartupGrace time.Duration
}

// Clients are what the controller writes with.
type Clients struct {
	Cluster  clusterclient.Interface
	Fleetfit fleetfitclient.Interface
	Recorder events.EventRecorder
}

// Controller schedules Placements.
type Controller struct {
	client    clusterclient.Interface
	fleetfit  fleetfitclient.Interface
	recorder  events.EventRecorder
	cache     *cache.Cache
	scheduler *scheduler.Scheduler
	opts      Options

	placements clusterlisterv1beta1.PlacementLister
	// decisionsByPlacement indexes the PlacementDecisions by their placement (byPlacement).
	decisionsByPlacement toolscache.Indexer
	sets                 clusterlisterv1beta2.ManagedClusterSetLister
	bindings             clusterlisterv1beta2.ManagedClusterSetBindingLister
	intents              fleetfitlisters.HPAIntentLister
	// intentIndex indexes the HPAIntents by the placements they name (byPlacementRef).
	intentIndex toolscache.Indexer
	// interests are the placements that care about clusters they do not decide (see
	// clusterChanged).
	interests interests

	queue  workqueue.TypedRateLimitingInterface[string]
	synced []toolscache.InformerSynced
	// started is set once the caches are synced and every placement is queued; until then
	// event handlers only update the cache, since working out which placements an event
	// affects would be wasted on the initial list of every object.
	started  atomic.Bool
	progress workers.Progress

	// decisionWrites and statusWrites remember this controller's own writes of decision
	// lists and Placement status, so that their informer events trigger no cycle and a
	// lister that has not caught up yet causes no second write.
	decisionWrites writeTracker
	// reserveMu guards reserving a cycle's result against the reservations it saw (see sync),
	// and commits orders the cycles of placements with intents.
	reserveMu    sync.Mutex
	commits      *commitOrder
	statusWrites writeTracker
	// scoreWrites remembers when a placement's decisions were last rewritten only for scores,
	// for scoreRateLimit.
	scoreWrites sync.Map
	// scheduledWrites remembers, by intent UID, the status.scheduledPlacement last written.
	scheduledWrites sync.Map
	// moves remembers, by placement key, when a cycle last took a decided cluster away from
	// the placement, for the rate at which it may follow its scores (see holdStill).
	moves sync.Map
	// firstSeen remembers when a Placement created while the controller runs was first seen
	// (see intentSettle).
	firstSeen sync.Map
}

// New wires the controller to the informers. Call Run after starting the factories.
func New(clients Clients, ocm clusterinformers.SharedInformerFactory, fleetfit fleetfitinformers.SharedInformerFactory,
	sched *scheduler.Scheduler, c *cache.Cache, opts Options) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Mode == "" {
		opts.Mode = placementmode.All
	}
	if _, err := placementmode.ParseMode(string(opts.Mode)); err != nil {
		return nil, fmt.Errorf("placements mode %w", err)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	pi := ocm.Cluster().V1beta1().Placements()
	di := ocm.Cluster().V1beta1().PlacementDecisions()
	ci := ocm.Cluster().V1().ManagedClusters()
	si := ocm.Cluster().V1beta2().ManagedClusterSets()
	bi := ocm.Cluster().V1beta2().ManagedClusterSetBindings()
	ai := ocm.Cluster().V1alpha1().AddOnPlacementScores()
	ii := fleetfit.Fleetfit().V1alpha1().ClusterInventories()
	hi := fleetfit.Fleetfit().V1alpha1().HPAIntents()
	ctrl := &Controller{
		client: clients.Cluster, fleetfit: clients.Fleetfit, recorder: clients.Recorder, cache: c, scheduler: sched, opts: opts,
		placements: pi.Lister(), sets: si.Lister(), bindings: bi.Lister(), intents: hi.Lister(),
		intentIndex:          hi.Informer().GetIndexer(),
		decisionsByPlacement: di.Informer().GetIndexer(),
		commits:              newCommitOrder(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workers.RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "placements"}),
	}
	if err := addDecisionIndex(di.Informer()); err != nil {
		return nil, err
	}
	if err := addIntentIndex(hi.Informer()); err != nil {
		return nil, err
	}
	handlers := []struct {
		informer toolscache.SharedIndexInformer
		handler  toolscache.ResourceEventHandler
	}{
		{pi.Informer(), ctrl.placementHandler()},
		{di.Informer(), ctrl.decisionHandler()},
		{ci.Informer(), ctrl.clusterHandler()},
		{si.Informer(), ctrl.setHandler()},
		{bi.Informer(), ctrl.bindingHandler()},
		{ai.Informer(), ctrl.scoreHandler()},
		{ii.Informer(), ctrl.inventoryHandler()},
		{hi.Informer(), ctrl.intentHandler()},
	}
	for _, h := range handlers {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, err
		}
		ctrl.synced = append(ctrl.synced, reg.HasSynced)
	}
	return ctrl, nil
}

// Run processes placements with the configured number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	go c.watchLapses(ctx)
	workers.Loop{
		Name: "placement", Queue: c.queue, Synced: c.synced, Sync: c.sync, Workers: c.opts.Workers,
		// Everything is scheduled once at start: informers' add events ran before the
		// handlers enqueued anything, and this is the same as OCM's start-up resync.
		Seed: func() int {
			now := c.opts.Clock.Now()
			// The capacity the last decisions before a restart promised is taken again before
			// the first cycle can count it as free.
			c.restoreReservations(klog.FromContext(ctx), now)
			c.started.Store(true)
			placements, _ := c.placements.List(labels.Everything())
			snap := c.cache.Snapshot()
			for _, p := range placements {
				c.trackInterest(p, false)
				if len(snap.DecidedNames(p.Namespace+"/"+p.Name)) > 0 {
					// A placement that follows its scores waits one scoreRateLimit after a
					// start before it may move for scores alone: a restart moves nothing.
					c.moves.LoadOrStore(p.Namespace+"/"+p.Name, now)
				}
				// Placements that decide clusters are looked at again only after the startup
				// grace (see Options.StartupGrace); new ones, and any change from now on, at once.
				if len(snap.DecidedNames(p.Namespace+"/"+p.Name)) > 0 && c.opts.StartupGrace > 0 {
					if c.Handles(p) {
						c.queue.AddAfter(p.Namespace+"/"+p.Name, c.opts.StartupGrace)
					}
					continue
				}
				c.enqueue(p)
			}
			return len(placements)
		},
	}.Run(ctx)
}

// stallAfter is how long the controller may go without finishing a cycle, while placements
// wait, before its health check fails. Cycles are bounded (CEL budgets, capped retries), so a
// longer silence means a worker is stuck and the process should be restarted.
const stallAfter = 3 * time.Minute

// Healthy returns an error when placements are waiting and no cycle has finished for a while.
func (c *Controller) Healthy() error {
	if err := c.progress.Stalled(time.Now(), stallAfter); err != nil {
		return fmt.Errorf("placement controller: %w", err)
	}
	return nil
}

// RegisterFleetMetrics registers gauges computed from the scheduler's cache when scraped:
// fleetfit_stale_inventories, the clusters whose ClusterInventory is stale (they keep their
// decisions but get no new ones until their agent reports again).
func (c *Controller) RegisterFleetMetrics(reg prometheus.Registerer) error {
	return reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "fleetfit", Name: "stale_inventories",
		Help: "Managed clusters whose ClusterInventory is older than the hub's --inventory-stale-after: they keep their decisions but are not chosen anew.",
	}, func() float64 {
		snap, now := c.cache.Snapshot(), c.opts.Clock.Now()
		n := 0
		for i := range snap.NumClusters() {
			if snap.Cluster(i).InventoryStale(now) {
				n++
			}
		}
		return float64(n)
	}))
}

// Handles reports whether fleetfit schedules the placement in the controller's mode.
func (c *Controller) Handles(p *clusterv1beta1.Placement) bool {
	return c.opts.Mode.Handles(p)
}

func (c *Controller) enqueue(p *clusterv1beta1.Placement) {
	if c.started.Load() && c.Handles(p) {
		c.queue.Add(p.Namespace + "/" + p.Name)
	}
}
