// Package hpaintent is the HPAIntent validation controller. It owns one
// condition, Valid: True when the intent's Placement exists and the intent
// resolves (pkg/hpa), False with a message that says what to fix otherwise.
// The placement and action controllers read the condition (hpa.IsValid) instead
// of repeating the checks, the way cert-manager's controllers talk only
// through status.
package hpaintent

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterlisterv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/delivery"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// byPlacement indexes intents by "<namespace>/<placementRef.name>", so that a
// Placement's arrival or removal revalidates the intents that refer to it.
const byPlacement = "fleetfit.io/hpaintent-placement"

// Options configure the controller.
type Options struct {
	// Workers is the number of intents validated at once; default 2.
	Workers int
	// Clock stamps condition transitions; default the real clock.
	Clock clock.Clock
	// Delivery is what intents may deliver; default delivery.DefaultKinds into
	// the intent's namespace.
	Delivery *delivery.Policy
}

// Controller validates HPAIntents.
type Controller struct {
	client   fleetfitclient.Interface
	recorder events.EventRecorder
	opts     Options

	intents    fleetfitlisters.HPAIntentLister
	indexer    toolscache.Indexer
	placements clusterlisterv1beta1.PlacementLister

	queue  workqueue.TypedRateLimitingInterface[string]
	synced []toolscache.InformerSynced
}

// New wires the controller to the informers. Call it before starting the
// factories (it adds an index to the HPAIntent informer), and Run after.
// The recorder's scheme must know fleetfit's types, since events regard
// HPAIntents.
func New(client fleetfitclient.Interface, recorder events.EventRecorder, ocm clusterinformers.SharedInformerFactory,
	fleetfit fleetfitinformers.SharedInformerFactory, opts Options) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	hi := fleetfit.Fleetfit().V1alpha1().HPAIntents()
	pi := ocm.Cluster().V1beta1().Placements()
	if _, exists := hi.Informer().GetIndexer().GetIndexers()[byPlacement]; !exists {
		if err := hi.Informer().AddIndexers(toolscache.Indexers{byPlacement: placementIndex}); err != nil {
			return nil, fmt.Errorf("indexing HPAIntents by placement: %w", err)
		}
	}
	c := &Controller{
		client: client, recorder: recorder, opts: opts,
		intents: hi.Lister(), indexer: hi.Informer().GetIndexer(), placements: pi.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workers.RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "hpaintents"}),
	}
	for _, h := range []struct {
		informer toolscache.SharedIndexInformer
		handler  toolscache.ResourceEventHandler
	}{
		{hi.Informer(), c.intentHandler()},
		{pi.Informer(), c.placementHandler()},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, err
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

func placementIndex(obj any) ([]string, error) {
	in, ok := obj.(*v1alpha1.HPAIntent)
	if !ok {
		return nil, nil
	}
	return []string{in.Namespace + "/" + in.Spec.PlacementRef.Name}, nil
}

// Run validates intents with the configured number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workers.Loop{
		Name: "hpaintent", Queue: c.queue, Synced: c.synced, Sync: c.sync, Workers: c.opts.Workers,
		Seed: func() int {
			intents, _ := c.intents.List(labels.Everything())
			for _, in := range intents {
				c.enqueue(in)
			}
			return len(intents)
		},
	}.Run(ctx)
}

func (c *Controller) enqueue(in *v1alpha1.HPAIntent) {
	c.queue.Add(in.Namespace + "/" + in.Name)
}

func (c *Controller) intentHandler() toolscache.ResourceEventHandler {
	return handler.Funcs[*v1alpha1.HPAIntent]{
		Add: c.enqueue,
		Update: func(old, in *v1alpha1.HPAIntent) {
			// A spec change needs a new verdict; a Valid condition changed by
			// someone else is put back. Other controllers' status writes are
			// none of our business.
			if old.Generation != in.Generation || !equality.Semantic.DeepEqual(
				meta.FindStatusCondition(old.Status.Conditions, v1alpha1.ConditionValid),
				meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionValid)) {
				c.enqueue(in)
			}
		},
	}
}

// placementHandler revalidates the intents that refer to a Placement when it
// appears or goes away; its spec does not matter to validity.
func (c *Controller) placementHandler() toolscache.ResourceEventHandler {
	onPlacement := func(p *clusterv1beta1.Placement) {
		objs, err := c.indexer.ByIndex(byPlacement, p.Namespace+"/"+p.Name)
		if err != nil {
			return
		}
		for _, o := range objs {
			if in, ok := o.(*v1alpha1.HPAIntent); ok {
				c.enqueue(in)
			}
		}
	}
	return handler.Funcs[*clusterv1beta1.Placement]{Add: onPlacement, Delete: onPlacement}
}
