// Package action is fleetfit's action controller: it delivers the workload of each HPAIntent to
// the clusters its Placement decides, as one ManifestWork per cluster in the cluster's namespace,
// with every consumer's pod template mutated (pkg/mutation) so that its pods land on the nodes
// that have what they need; an intent that splits its replicas runs each cluster's share there
// (split.go). It reports the deliveries back in the intent's status, with what the clusters'
// agents report of the intent's pods that wait for a node, and, when the hub moves the workload
// away from a cluster, keeps it there until it is available elsewhere (make before break,
// moves.go).
package action

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterlisterv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	worklisters "open-cluster-management.io/api/client/work/listers/work/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/delivery"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

const (
	// Finalizer keeps a deleted intent until its ManifestWorks are gone. A ManifestWork lives
	// in its cluster's namespace, so it cannot have the intent as its owner: the labels
	// fleetfitv1alpha1.LabelIntentNamespace and LabelIntentName find an intent's ManifestWorks
	// (see WorkSelector and IntentOf: a name longer than a label value is cut), and this
	// finalizer takes the rest of that role.
	Finalizer = "fleetfit.io/manifestworks"
	// AnnotationOptional lists the optional requirements applied on that cluster, so that a
	// delivery keeps them while its own pods use the room they needed.
	AnnotationOptional = "fleetfit.io/optional-requirements"
)

// Options configure the controller.
type Options struct {
	Workers int
	Clock   clock.Clock
	// Delivery is what intents may deliver; default delivery.DefaultKinds into the intent's
	// namespace. The validation controller refuses intents that ask for more; the action
	// controller checks again before it writes a ManifestWork.
	Delivery *delivery.Policy
}

// Fleet is what delivery reads of the scheduler's cache (the hub passes its *cache.Cache, as
// to the placement controller): the compiled intents and the clusters' inventories that
// scheduling read, so that delivery applies an optional requirement where the scheduler
// found room for it, never from a second view of the same report.
type Fleet interface {
	// Intent is the compiled form of one generation of an intent, compiled once whoever
	// reads it.
	framework.IntentCompiler
	// ClusterInfo is what the cache holds of a cluster, its inventory's View included, or
	// nil for a cluster it does not hold.
	ClusterInfo(name string) *framework.ClusterInfo
	// Inventory is the ClusterInventory the cache holds for a cluster, or nil.
	Inventory(cluster string) *fleetfitv1alpha1.ClusterInventory
}

// Clients are what the controller writes with.
type Clients struct {
	Work     workclient.Interface
	Fleetfit fleetfitclient.Interface
	Recorder events.EventRecorder
}

// Controller delivers workloads.
type Controller struct {
	clients Clients
	opts    Options

	// fleet is the scheduler's cache, which the placement controller keeps up to date.
	fleet Fleet

	intents     fleetfitlisters.HPAIntentLister
	decisions   clusterlisterv1beta1.PlacementDecisionLister
	works       worklisters.ManifestWorkLister
	inventories fleetfitlisters.ClusterInventoryLister

	queue  workqueue.TypedRateLimitingInterface[string]
	synced []toolscache.InformerSynced
}

// New wires the controller to the informers and to the scheduler's cache, which it only
// reads. Call Run after starting the factories.
func New(clients Clients, ocm clusterinformers.SharedInformerFactory, work workinformers.SharedInformerFactory,
	fleetfit fleetfitinformers.SharedInformerFactory, fleet Fleet, opts Options) (*Controller, error) {
	if fleet == nil {
		return nil, errors.New("the action controller needs the scheduler's cache")
	}
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	hi := fleetfit.Fleetfit().V1alpha1().HPAIntents()
	di := ocm.Cluster().V1beta1().PlacementDecisions()
	wi := work.Work().V1().ManifestWorks()
	c := &Controller{
		clients: clients, opts: opts, fleet: fleet,
		intents: hi.Lister(), decisions: di.Lister(), works: wi.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workers.RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "deliveries"}),
	}
	for _, h := range []struct {
		informer toolscache.SharedIndexInformer
		handler  toolscache.ResourceEventHandler
	}{
		{hi.Informer(), c.intentHandler()},
		{di.Informer(), c.decisionHandler()},
		{wi.Informer(), c.workHandler()},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, err
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	// The placement controller fills the cache from the same inventory informer, through a
	// handler of its own that may run behind this controller's: deliveries wait until the
	// cache holds every inventory of the informer's first list, so that a delivery just after
	// a start never misses an optional requirement the cluster's report allows.
	ii := fleetfit.Fleetfit().V1alpha1().ClusterInventories()
	reg, err := ii.Informer().AddEventHandler(c.inventoryHandler())
	if err != nil {
		return nil, err
	}
	c.inventories = ii.Lister()
	c.synced = append(c.synced, func() bool { return reg.HasSynced() && c.fleetHolds(c.inventories) })
	return c, nil
}

// fleetHolds reports whether the cache holds an inventory for every cluster that the lister
// has the agent's report of.
func (c *Controller) fleetHolds(inventories fleetfitlisters.ClusterInventoryLister) bool {
	all, err := inventories.List(labels.Everything())
	if err != nil {
		return false
	}
	for _, inv := range all {
		if cache.InventoryName(inv) && c.fleet.Inventory(inv.Namespace) == nil {
			return false
		}
	}
	return true
}

// Run delivers until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workers.Loop{
		Name: "action", Queue: c.queue, Synced: c.synced, Sync: c.sync, Workers: c.opts.Workers,
		Seed: func() int {
			intents, _ := c.intents.List(labels.Everything())
			for _, in := range intents {
				c.enqueue(in)
			}
			return len(intents)
		},
	}.Run(ctx)
}

func (c *Controller) enqueue(in *fleetfitv1alpha1.HPAIntent) {
	c.queue.Add(in.Namespace + "/" + in.Name)
}

func (c *Controller) intentHandler() toolscache.ResourceEventHandler {
	return handler.Funcs[*fleetfitv1alpha1.HPAIntent]{
		Add: c.enqueue,
		Update: func(old, in *fleetfitv1alpha1.HPAIntent) {
			oldValid, _ := hpa.IsValid(old)
			valid, _ := hpa.IsValid(in)
			// A move away from a cluster (status.moves) changes what its ManifestWork waits for;
			// the shares of a split intent (status.split) what each cluster runs, or that a
			// decided cluster may now get its ManifestWork.
			if old.Generation != in.Generation || oldValid != valid || !old.DeletionTimestamp.Equal(in.DeletionTimestamp) ||
				old.Status.ScheduledPlacement != in.Status.ScheduledPlacement ||
				!equality.Semantic.DeepEqual(old.Status.Moves, in.Status.Moves) ||
				!equality.Semantic.DeepEqual(old.Status.Split, in.Status.Split) {
				c.enqueue(in)
			}
		},
		Delete: c.enqueue,
	}
}

// decisionHandler requeues the intents of the placement whose decisions changed.
func (c *Controller) decisionHandler() toolscache.ResourceEventHandler {
	onDecision := func(d *clusterv1beta1.PlacementDecision) {
		placement := d.Labels[clusterv1beta1.PlacementLabel]
		intents, _ := c.intents.HPAIntents(d.Namespace).List(labels.Everything())
		for _, in := range intents {
			if in.Spec.PlacementRef.Name == placement {
				c.enqueue(in)
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

// workHandler requeues the intent a ManifestWork delivers when its status changes.
func (c *Controller) workHandler() toolscache.ResourceEventHandler {
	onWork := func(w *workv1.ManifestWork) {
		if ns, name, ok := IntentOf(w); ok {
			c.queue.Add(ns + "/" + name)
		}
	}
	return handler.Funcs[*workv1.ManifestWork]{
		Add: onWork,
		Update: func(old, w *workv1.ManifestWork) {
			if !equality.Semantic.DeepEqual(old.Status, w.Status) {
				onWork(w)
			}
		},
		Delete: onWork,
	}
}
