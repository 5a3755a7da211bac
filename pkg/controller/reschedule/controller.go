// Package reschedule is the controller that moves an HPAIntent's workload away from a
// decided cluster where its pods stay unschedulable (spec.rescheduling). It decides a move and
// nothing else: it writes the move into the intent's status.moves, where the placement
// controller reads it (HardwareFit leaves the cluster out for the move's back-off, so the
// next cycle decides another cluster) and the action controller completes it (the old
// cluster's ManifestWork goes once the replacement is available).
//
// A move is written only when a dry run of the placement's cycle, with the move added, decides
// a cluster the placement does not decide now; otherwise nothing moves and the intent's
// Rescheduled condition says why. Everything it needs to remember (back-offs, the moves of
// the last hour, a move in progress) is in the intent's status, so a restarted hub forgets
// nothing.
package reschedule

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterlisterv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// Options configure the controller.
type Options struct {
	// Workers is how many intents are looked at once (2 when 0).
	Workers int
	Clock   clock.Clock
	Metrics *Metrics
	// StartupGrace is how long after its caches are synced the controller waits before it
	// looks at every intent of its own accord, so that agents whose reports failed while
	// the hub was away report first; what changes meanwhile is looked at at once.
	StartupGrace time.Duration
}

// Clients are what the controller writes with.
type Clients struct {
	Fleetfit fleetfitclient.Interface
	Recorder events.EventRecorder
}

// Controller decides moves.
type Controller struct {
	clients Clients
	opts    Options
	// cache and scheduler are the placement controller's, for the dry run of a cycle.
	cache     *cache.Cache
	scheduler *scheduler.Scheduler

	intents     fleetfitlisters.HPAIntentLister
	inventories fleetfitlisters.ClusterInventoryLister
	placements  clusterlisterv1beta1.PlacementLister
	decisions   clusterlisterv1beta1.PlacementDecisionLister

	queue   workqueue.TypedRateLimitingInterface[string]
	synced  []toolscache.InformerSynced
	started atomic.Bool
}

// New wires the controller to the informers, to the scheduler and to its cache, which it only
// reads. Call Run after starting the factories.
func New(clients Clients, ocm clusterinformers.SharedInformerFactory, fleetfit fleetfitinformers.SharedInformerFactory,
	sched *scheduler.Scheduler, c *cache.Cache, opts Options) (*Controller, error) {
	if sched == nil || c == nil {
		return nil, errors.New("the reschedule controller needs the hub's scheduler and its cache")
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	hi := fleetfit.Fleetfit().V1alpha1().HPAIntents()
	ii := fleetfit.Fleetfit().V1alpha1().ClusterInventories()
	pi := ocm.Cluster().V1beta1().Placements()
	di := ocm.Cluster().V1beta1().PlacementDecisions()
	ctrl := &Controller{
		clients: clients, opts: opts, cache: c, scheduler: sched,
		intents: hi.Lister(), inventories: ii.Lister(), placements: pi.Lister(), decisions: di.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workers.RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "reschedule"}),
	}
	for _, h := range []struct {
		informer toolscache.SharedIndexInformer
		handler  toolscache.ResourceEventHandler
	}{
		{hi.Informer(), ctrl.intentHandler()},
		{ii.Informer(), ctrl.inventoryHandler()},
		{di.Informer(), ctrl.decisionHandler()},
		{pi.Informer(), toolscache.ResourceEventHandlerFuncs{}},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, err
		}
		ctrl.synced = append(ctrl.synced, reg.HasSynced)
	}
	return ctrl, nil
}

// Run decides moves until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workers.Loop{
		Name: "reschedule", Queue: c.queue, Synced: c.synced, Sync: c.sync, Workers: c.opts.Workers,
		Seed: func() int {
			c.started.Store(true)
			intents, _ := c.intents.List(labels.Everything())
			for _, in := range intents {
				c.queue.AddAfter(in.Namespace+"/"+in.Name, c.opts.StartupGrace)
			}
			return len(intents)
		},
	}.Run(ctx)
}

func (c *Controller) enqueue(namespace, name string) {
	if c.started.Load() {
		c.queue.Add(namespace + "/" + name)
	}
}

// intentHandler requeues an intent when what a verdict reads of it changes: its spec, the
// placement it shapes, its moves (a move completes). Its conditions, candidates and
// deliveries, which other controllers write all the time, do not.
func (c *Controller) intentHandler() toolscache.ResourceEventHandler {
	return handler.Funcs[*fleetfitv1alpha1.HPAIntent]{
		Add: func(in *fleetfitv1alpha1.HPAIntent) { c.enqueue(in.Namespace, in.Name) },
		Update: func(old, in *fleetfitv1alpha1.HPAIntent) {
			if old.Generation != in.Generation || old.Status.ScheduledPlacement != in.Status.ScheduledPlacement ||
				!equality.Semantic.DeepEqual(old.Status.Moves, in.Status.Moves) {
				c.enqueue(in.Namespace, in.Name)
			}
		},
	}
}

// inventoryHandler requeues the intents whose unschedulable pods a report adds, changes or
// drops; nothing else in a report matters here (a heartbeat, free amounts).
func (c *Controller) inventoryHandler() toolscache.ResourceEventHandler {
	onChange := func(lists ...[]fleetfitv1alpha1.UnschedulableWorkload) {
		for _, list := range lists {
			for _, u := range list {
				for _, name := range c.intentsLabelled(u.IntentNamespace, u.IntentName) {
					c.enqueue(u.IntentNamespace, name)
				}
			}
		}
	}
	return handler.Funcs[*fleetfitv1alpha1.ClusterInventory]{
		Add: func(inv *fleetfitv1alpha1.ClusterInventory) {
			if cache.InventoryName(inv) {
				onChange(inv.Status.Unschedulable)
			}
		},
		Update: func(old, inv *fleetfitv1alpha1.ClusterInventory) {
			if cache.InventoryName(inv) && !equality.Semantic.DeepEqual(old.Status.Unschedulable, inv.Status.Unschedulable) {
				onChange(old.Status.Unschedulable, inv.Status.Unschedulable)
			}
		},
		Delete: func(inv *fleetfitv1alpha1.ClusterInventory) {
			if cache.InventoryName(inv) {
				onChange(inv.Status.Unschedulable)
			}
		},
	}
}

// intentsLabelled returns the names of the intents of namespace whose pods carry the label
// value: the intent of that name, or, for a value cut from a long name, the intents whose
// names cut to it.
func (c *Controller) intentsLabelled(namespace, value string) []string {
	if len(validation.IsDNS1123Subdomain(value)) == 0 {
		return []string{value}
	}
	all, _ := c.intents.HPAIntents(namespace).List(labels.Everything())
	var out []string
	for _, in := range all {
		if fleetfitv1alpha1.IntentLabelValue(in.Name) == value {
			out = append(out, in.Name)
		}
	}
	slices.Sort(out)
	return out
}

// decisionHandler requeues the intents that shape a placement whose decisions change: a
// cluster newly decided may already report their pods unschedulable.
func (c *Controller) decisionHandler() toolscache.ResourceEventHandler {
	onDecision := func(d *clusterv1beta1.PlacementDecision) {
		placement := d.Labels[clusterv1beta1.PlacementLabel]
		all, _ := c.intents.HPAIntents(d.Namespace).List(labels.Everything())
		for _, in := range all {
			if in.Status.ScheduledPlacement == placement {
				c.enqueue(in.Namespace, in.Name)
			}
		}
	}
	return handler.Funcs[*clusterv1beta1.PlacementDecision]{
		Add: onDecision,
		Update: func(old, d *clusterv1beta1.PlacementDecision) {
			if !equality.Semantic.DeepEqual(old.Status, d.Status) {
				onDecision(d)
			}
		},
		Delete: onDecision,
	}
}
