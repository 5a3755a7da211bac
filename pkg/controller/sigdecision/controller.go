package sigdecision

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterlisters "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	sigv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
	sigclient "sigs.k8s.io/cluster-inventory-api/client/clientset/versioned"
	siginformers "sigs.k8s.io/cluster-inventory-api/client/informers/externalversions"
	siglisters "sigs.k8s.io/cluster-inventory-api/client/listers/apis/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// Controller keeps one SIG PlacementDecision per OCM PlacementDecision, as Desired says.
// Its queue holds "namespace/name" keys, the same for an OCM object and its mirror.
type Controller struct {
	client    sigclient.Interface
	decisions clusterlisters.PlacementDecisionLister
	mirrors   siglisters.PlacementDecisionLister

	queue  workqueue.TypedRateLimitingInterface[string]
	synced []toolscache.InformerSynced
	// remove takes the controller's handler off the OCM informer, which outlives it when
	// the SIG CRD goes away.
	remove func() error
}

// NewSIGInformers returns the informer factory of the mirror: only the SIG PlacementDecisions
// carrying the cluster-manager label, the ones this controller may update.
func NewSIGInformers(client sigclient.Interface) siginformers.SharedInformerFactory {
	selector := labels.SelectorFromSet(labels.Set{sigv1alpha1.LabelClusterManagerKey: ClusterManager}).String()
	return siginformers.NewSharedInformerFactoryWithOptions(client, 0,
		siginformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
}

// New wires the controller to the OCM informers (which may already run) and to sig, made by
// NewSIGInformers; start sig, then call Run.
func New(client sigclient.Interface, ocm clusterinformers.SharedInformerFactory, sig siginformers.SharedInformerFactory) (*Controller, error) {
	di := ocm.Cluster().V1beta1().PlacementDecisions()
	mi := sig.Apis().V1alpha1().PlacementDecisions()
	c := &Controller{
		client: client, decisions: di.Lister(), mirrors: mi.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workers.RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "sigdecisions"}),
	}
	onDecision := func(d *clusterv1beta1.PlacementDecision) { c.queue.Add(d.Namespace + "/" + d.Name) }
	decisionReg, err := di.Informer().AddEventHandler(handler.Funcs[*clusterv1beta1.PlacementDecision]{
		Add: onDecision,
		Update: func(old, cur *clusterv1beta1.PlacementDecision) {
			// Placement controllers rewrite decisions only when something changed, but a
			// resync delivers equal objects: skip those.
			if old.ResourceVersion != cur.ResourceVersion {
				onDecision(cur)
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding a PlacementDecision event handler: %w", err)
	}
	c.remove = func() error { return di.Informer().RemoveEventHandler(decisionReg) }
	// A mirror changed or deleted by someone else is written back. A mirror's arrival
	// requeues it too: a sync that found none in the cache while the API server already had
	// it (a create answered AlreadyExists) left the decision's newer state unwritten.
	onMirror := func(m *sigv1alpha1.PlacementDecision) { c.queue.Add(m.Namespace + "/" + m.Name) }
	mirrorReg, err := mi.Informer().AddEventHandler(handler.Funcs[*sigv1alpha1.PlacementDecision]{
		Add:    onMirror,
		Update: func(_, cur *sigv1alpha1.PlacementDecision) { onMirror(cur) },
		Delete: onMirror,
	})
	if err != nil {
		_ = c.remove()
		return nil, fmt.Errorf("adding a SIG PlacementDecision event handler: %w", err)
	}
	c.synced = []toolscache.InformerSynced{decisionReg.HasSynced, mirrorReg.HasSynced}
	return c, nil
}

// Run mirrors decisions until ctx ends, then detaches from the OCM informer.
func (c *Controller) Run(ctx context.Context) {
	defer func() {
		if err := c.remove(); err != nil {
			klog.FromContext(ctx).Error(err, "Removing the PlacementDecision event handler")
		}
	}()
	workers.Loop{Name: "sigdecisions", Queue: c.queue, Synced: c.synced, Sync: c.sync, Workers: 1}.Run(ctx)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we produce; nothing to retry
	}
	d, err := c.decisions.PlacementDecisions(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The mirror is owned by the OCM object: the garbage collector deletes it.
		return nil
	}
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("placementDecision", klog.KObj(d))
	want := Desired(d)
	mirrors := c.client.ApisV1alpha1().PlacementDecisions(ns)
	existing, err := c.mirrors.PlacementDecisions(ns).Get(name)
	if apierrors.IsNotFound(err) {
		_, err := mirrors.Create(ctx, want, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			// Either this controller's own object that the informer has not shown yet (its
			// event brings the key back), or another scheduler's, which is not ours to touch.
			logger.V(logs.Changes).Info("SIG PlacementDecision exists already", "sigPlacementDecision", klog.KObj(want))
			return nil
		}
		if err != nil {
			return fmt.Errorf("creating SIG PlacementDecision %s: %w", key, err)
		}
		logger.V(logs.Changes).Info("Created SIG PlacementDecision", "clusters", len(want.Decisions))
		return nil
	}
	if err != nil {
		return err
	}
	upd := Merge(existing, want)
	if upd == nil {
		return nil
	}
	if _, err := mirrors.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			c.queue.Add(key) // deleted meanwhile: create it again
			return nil
		}
		return fmt.Errorf("updating SIG PlacementDecision %s: %w", key, err)
	}
	logger.V(logs.Changes).Info("Updated SIG PlacementDecision", "clusters", len(want.Decisions))
	return nil
}
