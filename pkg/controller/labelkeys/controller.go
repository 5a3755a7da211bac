// Package labelkeys is the hub's side of the label-key handshake: it tells every cluster's
// agent which node label keys the HPAIntents' feature requirements use, by writing them into
// each ClusterInventory's spec.labelKeys. The agent reports node labels of those keys and says
// so in status.reportedLabels; until it does, the scheduler takes requirements on them as
// unknown on that cluster (see pkg/inventory). The controller writes only the spec, and only
// the field it owns; the status stays the agent's.
//
// The keys are the same for every cluster, so they are computed once per change of the
// intents, and each inventory is patched only when its spec differs: an intent event that
// does not change the set of keys writes nothing, whatever the size of the fleet.
package labelkeys

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// recomputeKey asks the controller to compute the keys again from every intent. It is never
// the key of an inventory, which is always "namespace/name".
const recomputeKey = "labelkeys"

// Options configure the controller.
type Options struct {
	// Workers is the number of inventories patched at once; default 2.
	Workers int
}

// Controller keeps every ClusterInventory's spec.labelKeys equal to Keys of the HPAIntents.
type Controller struct {
	client      fleetfitclient.Interface
	opts        Options
	intents     fleetfitlisters.HPAIntentLister
	inventories fleetfitlisters.ClusterInventoryLister

	queue  workqueue.TypedRateLimitingInterface[string]
	synced []toolscache.InformerSynced

	mu sync.RWMutex
	// keys are what every inventory's spec.labelKeys must hold; valid once computed is set,
	// before which nothing is written (an empty set would clear every inventory).
	keys     []string
	computed bool
}

// New wires the controller to the informers; call Run after starting the factory.
func New(client fleetfitclient.Interface, fleetfit fleetfitinformers.SharedInformerFactory, opts Options) (*Controller, error) {
	if opts.Workers <= 0 {
		opts.Workers = 2
	}
	hi := fleetfit.Fleetfit().V1alpha1().HPAIntents()
	ci := fleetfit.Fleetfit().V1alpha1().ClusterInventories()
	c := &Controller{
		client: client, opts: opts, intents: hi.Lister(), inventories: ci.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workers.RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "labelkeys"}),
	}
	for _, h := range []struct {
		informer toolscache.SharedIndexInformer
		handler  toolscache.ResourceEventHandler
	}{
		{hi.Informer(), c.intentHandler()},
		{ci.Informer(), c.inventoryHandler()},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			return nil, fmt.Errorf("adding event handler: %w", err)
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	return c, nil
}

// Run writes label keys until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	workers.Loop{
		Name: "labelkeys", Queue: c.queue, Synced: c.synced, Sync: c.sync, Workers: c.opts.Workers,
		// Inventories are queued once the keys are known.
		Seed: func() int { c.queue.Add(recomputeKey); return 1 },
	}.Run(ctx)
}

func (c *Controller) intentHandler() toolscache.ResourceEventHandler {
	recompute := func(*v1alpha1.HPAIntent) { c.queue.Add(recomputeKey) }
	return handler.Funcs[*v1alpha1.HPAIntent]{
		Add: recompute,
		Update: func(old, in *v1alpha1.HPAIntent) {
			// Status writes, the most frequent updates, cannot change the keys.
			if old.Generation != in.Generation {
				c.queue.Add(recomputeKey)
			}
		},
		Delete: recompute,
	}
}

// inventoryHandler queues an inventory only when its spec differs from the keys: agents
// rewrite their status every few minutes, and 10,000 of them must not keep the queue busy.
func (c *Controller) inventoryHandler() toolscache.ResourceEventHandler {
	onInventory := func(inv *v1alpha1.ClusterInventory) {
		if !cache.InventoryName(inv) {
			return
		}
		if keys, computed := c.wanted(); computed && !slices.Equal(inv.Spec.LabelKeys, keys) {
			c.queue.Add(inv.Namespace + "/" + inv.Name)
		}
	}
	return handler.Funcs[*v1alpha1.ClusterInventory]{
		Add:    onInventory,
		Update: func(_, inv *v1alpha1.ClusterInventory) { onInventory(inv) },
	}
}

func (c *Controller) wanted() ([]string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.keys, c.computed
}

func (c *Controller) sync(ctx context.Context, key string) error {
	if key == recomputeKey {
		return c.recompute(ctx)
	}
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we produce; nothing to retry
	}
	inv, err := c.inventories.ClusterInventories(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	keys, computed := c.wanted()
	if !computed || slices.Equal(inv.Spec.LabelKeys, keys) {
		return nil
	}
	return c.patch(ctx, inv, keys)
}

// recompute derives the keys from every intent and, when they changed, queues every
// inventory; each is patched only if its spec differs.
func (c *Controller) recompute(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	intents, err := c.intents.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing HPAIntents: %w", err)
	}
	keys, dropped := Keys(intents)
	c.mu.Lock()
	same := c.computed && slices.Equal(keys, c.keys)
	c.keys, c.computed = keys, true
	c.mu.Unlock()
	if dropped > 0 {
		// Requirements on the dropped keys stay unknown on the clusters whose prefixes do
		// not cover them; the scheduler's reasons say so per cluster.
		logger.Info("HPAIntents use more node label keys than agents are asked to report; the rest are not asked for",
			"limit", v1alpha1.MaxLabelKeys, "dropped", dropped)
	}
	if same {
		return nil
	}
	logger.V(logs.Changes).Info("Label keys changed", "keys", keys)
	invs, err := c.inventories.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing ClusterInventories: %w", err)
	}
	for _, inv := range invs {
		// Only the inventory named like its cluster is the agent's; others are ignored.
		if cache.InventoryName(inv) && !slices.Equal(inv.Spec.LabelKeys, keys) {
			c.queue.Add(inv.Namespace + "/" + inv.Name)
		}
	}
	return nil
}

// patch writes spec.labelKeys alone, with a merge patch: nothing else of the object, and
// never its status (the status subresource ignores the main resource's writes anyway).
func (c *Controller) patch(ctx context.Context, inv *v1alpha1.ClusterInventory, keys []string) error {
	body, err := labelKeysPatch(keys)
	if err != nil {
		return err
	}
	_, err = c.client.FleetfitV1alpha1().ClusterInventories(inv.Namespace).Patch(ctx, inv.Name, types.MergePatchType, body, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("patching the label keys of ClusterInventory %s/%s: %w", inv.Namespace, inv.Name, err)
	}
	klog.FromContext(ctx).V(logs.Debug).Info("Wrote label keys", "clusterInventory", klog.KObj(inv), "keys", len(keys))
	return nil
}

// labelKeysPatch is the merge patch that sets spec.labelKeys to keys, or removes it when
// there are none.
func labelKeysPatch(keys []string) ([]byte, error) {
	var value any
	if len(keys) > 0 {
		value = keys
	}
	return json.Marshal(map[string]any{"spec": map[string]any{"labelKeys": value}})
}

// Keys returns the node label keys that the intents' feature requirements use, optional ones
// included, sorted, without duplicates and invalid keys (validation refuses those intents),
// and at most v1alpha1.MaxLabelKeys of them; dropped counts those left out. When there are
// too many, the keys outside the default prefixes are kept first, since agents report those
// under them unless configured otherwise, each group in sorted order, so that the same
// intents always give the same keys.
func Keys(intents []*v1alpha1.HPAIntent) (keys []string, dropped int) {
	for _, in := range intents {
		for i := range in.Spec.Consumers {
			for _, r := range in.Spec.Consumers[i].Requirements {
				if r.Feature == nil || len(validation.IsQualifiedName(r.Feature.Key)) > 0 {
					continue
				}
				keys = append(keys, r.Feature.Key)
			}
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) <= v1alpha1.MaxLabelKeys {
		return keys, 0
	}
	dropped = len(keys) - v1alpha1.MaxLabelKeys
	// A stable partition: keys the default prefixes do not cover first, in order.
	slices.SortStableFunc(keys, func(a, b string) int {
		return compareBool(underDefaultPrefixes(a), underDefaultPrefixes(b))
	})
	keys = keys[:v1alpha1.MaxLabelKeys]
	slices.Sort(keys)
	return keys, dropped
}

func underDefaultPrefixes(key string) bool {
	for _, p := range inventory.DefaultFeatureLabelPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}
