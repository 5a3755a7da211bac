// Package action is fleetfit's action controller: it delivers the workload of each HPAIntent to
// the clusters its Placement decides, as one ManifestWork per cluster in the cluster's namespace,
// with every consumer's pod template mutated (pkg/mutation) so that its pods land on the nodes
// that have what they need. It reports the deliveries back in the intent's status.
package action

import (
	"context"
	"github.com/fleetfit/fleetfit/pkg/delivery"

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
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

const (
	// LabelIntentNamespace and LabelIntentName find the ManifestWorks of an intent (see
	// WorkSelector and IntentOf: a name longer than a label value is cut). A ManifestWork lives
	// in its cluster's namespace, so it cannot have the intent as its owner; the labels and the
	// Finalizer take that role.
	LabelIntentNamespace = "fleetfit.io/hpaintent-namespace"
	LabelIntentName      = "fleetfit.io/hpaintent-name"
	// Finalizer keeps a deleted intent until its ManifestWorks are gone.
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
	// Intents gives the compiled form of an intent; the hub passes its scheduler's cache, so
	// that delivery reads what scheduling read, compiled once per generation. Nil compiles
	// the intent on every sync.
	Intents IntentCompiler
}

// IntentCompiler gives the compiled form of an HPAIntent, which the caller must not modify,
// or the error of hpa.Compile.
type IntentCompiler interface {
	Intent(in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error)
}

// compile returns the compiled form of an intent.
func (c *Controller) compile(in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error) {
	if c.opts.Intents != nil {
		return c.opts.Intents.Intent(in)
	}
	return hpa.Compile(in)
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

	intents     fleetfitlisters.HPAIntentLister
	inventories fleetfitlisters.ClusterInventoryLister
	decisions   clusterlisterv1beta1.PlacementDecisionLister
	works       worklisters.ManifestWorkLister

	queue  workqueue.TypedRateLimitingInterface[string]
	synced []toolscache.InformerSynced
}

// New wires the controller to the informers. Call Run after starting the factories.
func New(clients Clients, ocm clusterinformers.SharedInformerFactory, work workinformers.SharedInformerFactory,
	fleetfit fleetfitinformers.SharedInformerFactory, opts Options) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	hi := fleetfit.Fleetfit().V1alpha1().HPAIntents()
	ii := fleetfit.Fleetfit().V1alpha1().ClusterInventories()
	di := ocm.Cluster().V1beta1().PlacementDecisions()
	wi := work.Work().V1().ManifestWorks()
	c := &Controller{
		clients: clients, opts: opts,
		intents: hi.Lister(), inventories: ii.Lister(), decisions: di.Lister(), works: wi.Lister(),
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
		{ii.Informer(), toolscache.ResourceEventHandlerFuncs{}},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, err
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
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
			if old.Generation != in.Generation || oldValid != valid || !old.DeletionTimestamp.Equal(in.DeletionTimestamp) ||
				old.Status.ScheduledPlacement != in.Status.ScheduledPlacement {
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
