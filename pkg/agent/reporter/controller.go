// Package reporter is what the agent reports to the hub: it follows the managed
// cluster's Nodes and Pods with informers, keeps an inventory.Cluster up to
// date, and writes what changed to the hub — the cluster's ClusterInventory
// and its AddOnPlacementScores (fleetfit-resources, and with
// Options.UsageScore resource-usage-score) — all in the cluster's namespace
// there.
//
// The reporter never writes the cluster's ManagedCluster: OCM's registration
// agent sums every node resource, extended ones included, into its status and
// replaces status.allocatable on each of its syncs, so a second writer would
// only fight it; and the agent's hub identity then needs no cluster-scoped
// permission at all. Free amounts, which OCM does not know, are in the
// ClusterInventory.
//
// It also follows its own ClusterInventory on the hub: the hub writes there
// (spec.labelKeys) which node label keys HPAIntents use, and the reporter
// reports node labels of those keys too, besides its prefixes, from the next
// report on, saying so in status.reportedLabels.
//
// It follows the pods that fleetfit delivered (those with the labels
// v1alpha1.LabelIntentNamespace and LabelIntentName) that wait for a node too,
// and reports per HPAIntent those kube-scheduler could not place
// (status.unschedulable), so the hub can tell a decision that failed on the
// cluster.
//
// With Options.MachineGroups it follows the managed cluster's MachineGroups as
// well and reports their machine types and usage (machinegroup.Report); a
// group's status change is reported like any other change, at most once per
// MinInterval.
//
// When the managed cluster serves Dynamic Resource Allocation
// (resource.k8s.io/v1) it follows ResourceSlices, DeviceClasses and
// ResourceClaims too, and reports the kinds of the devices
// (status.devices) and their free counts in the node shapes; see devices.
//
// With Clients.SpokeDynamic, when the managed cluster serves Karpenter's
// NodePools (karpenter.sh/v1), it follows them and the ConfigMap of
// instance types Options.InstanceTypesConfigMap names, and reports the pools
// with the shapes of node each can add (status.nodePools); see nodePools.
package reporter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// Defaults of Options.
const (
	DefaultMinInterval   = 5 * time.Second
	DefaultScoreValidity = 10 * time.Minute
	// maxBackoff bounds the wait between retries while the hub fails.
	maxBackoff = time.Minute
)

// syncKey is the queue's only key: every event means "the inventory may have
// changed", so they all coalesce into one pending sync.
const syncKey = "sync"

// Clients are the connections the reporter needs.
type Clients struct {
	// Spoke reads Nodes and Pods of the managed cluster.
	Spoke kubernetes.Interface
	// Hub writes ClusterInventories.
	Hub fleetfitclient.Interface
	// HubCluster writes AddOnPlacementScores.
	HubCluster clusterclient.Interface
	// SpokeFleetfit reads the managed cluster's MachineGroups; it is needed
	// only with Options.MachineGroups.
	SpokeFleetfit fleetfitclient.Interface
	// SpokeDynamic reads the managed cluster's Karpenter NodePools; without
	// it the reporter reports no node pools.
	SpokeDynamic dynamic.Interface
}

// Options tune the reporter. ClusterName and Inventory are required; zero
// durations and a nil Clock take the defaults.
type Options struct {
	// ClusterName is the managed cluster's name on the hub, which is also
	// the namespace of everything the reporter writes there.
	ClusterName string
	// Inventory says what is reported and how coarsely; start from
	// inventory.DefaultConfig.
	Inventory inventory.Config
	// MinInterval is the least time between two syncs with the hub, so that
	// a burst of pod events costs one write.
	MinInterval time.Duration
	// ScoreValidity is how long a written AddOnPlacementScore stays valid;
	// it is rewritten when half of that has passed.
	ScoreValidity time.Duration
	// ScoreReference overrides what free amounts are scored against; see
	// Scores.
	ScoreReference ScoreReference
	// Clock is injected for tests; the real clock by default.
	Clock clock.WithTicker
	// UsageScore also keeps the AddOnPlacementScore UsageScoreName, the
	// scores of OCM's resource-usage-collect-addon (see UsageScores), so
	// that Placements written for that add-on work unchanged. Leave it off
	// where that add-on runs too: two writers of one object would fight.
	UsageScore bool
	// OnReport, when set, is given every report the reporter computes,
	// whether or not the hub could be written; it must not keep or change it
	// and must return quickly (fleetfit-agent's ClusterClaims take theirs
	// from here, so claims and reports never disagree).
	OnReport func(*v1alpha1.ClusterInventoryStatus)
	// MachineGroups reports the managed cluster's MachineGroups with the
	// usage of their machine types (status.machineGroups). It needs
	// Clients.SpokeFleetfit; a cluster without the MachineGroup CRD reports none.
	MachineGroups bool
	// DeviceIgnoredAttributes are the device attribute names left out of
	// the reported device kinds (see inventory.DeviceInput); nil means
	// inventory.DefaultIgnoredDeviceAttributes, empty means none.
	DeviceIgnoredAttributes []string
	// InstanceTypesConfigMap names the ConfigMap, in the agent's own
	// namespace, whose key InstanceTypesKey lists the instance types the
	// cluster's node pools can launch; an empty Name reads none, and pools
	// then take their shapes from the nodes they launched.
	InstanceTypesConfigMap types.NamespacedName
}

// Controller is the reporter. Build it with New and start it with Run.
type Controller struct {
	opts    Options
	cluster *inventory.Cluster
	// syncsDone counts the syncs that completed, renewal scheduled: tests
	// step a fake clock only once the renewal waits on it.
	syncsDone atomic.Int32
	queue     workqueue.TypedRateLimitingInterface[string]
	factory   informers.SharedInformerFactory
	pods      informers.SharedInformerFactory
	synced    []cache.InformerSynced
	steps     []step
	inv       *inventoryWriter
	// groups follows MachineGroups; nil unless Options.MachineGroups.
	groups *machineGroups
	// unschedulable follows the delivered pods that wait for a node.
	unschedulable *unschedulablePods
	// devices follows the DRA objects, when the cluster serves them.
	devices *devices
	// pools follows Karpenter's NodePools, when the cluster serves them;
	// nil without Clients.SpokeDynamic.
	pools *nodePools

	// hub follows the cluster's own ClusterInventory for its spec; see
	// labelKeys.
	hub        fleetfitinformers.SharedInformerFactory
	hubSynced  cache.InformerSynced
	hubLister  fleetfitlisters.ClusterInventoryLister
	nodeLister corelisters.NodeLister
	// omittedKeys are the asked-for label keys last left out for their many
	// values; only sync, which runs on one worker, reads and writes them.
	omittedKeys []string

	mu       sync.Mutex
	nextSync time.Time // no sync starts before this
}

// New builds a reporter; nothing is contacted until Run.
func New(clients Clients, opts Options) (*Controller, error) {
	if opts.ClusterName == "" {
		return nil, errors.New("cluster name is required")
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultMinInterval
	}
	if opts.ScoreValidity <= 0 {
		opts.ScoreValidity = DefaultScoreValidity
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MachineGroups && clients.SpokeFleetfit == nil {
		return nil, errors.New("reporting machine groups needs a fleetfit client of the managed cluster")
	}
	cluster, err := inventory.NewCluster(opts.Inventory)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		opts:    opts,
		cluster: cluster,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			// Retries back off from MinInterval, so a failing hub is never
			// written to more often than a healthy one.
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.MinInterval, maxBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "fleetfit-inventory", Clock: opts.Clock},
		),
		factory: informers.NewSharedInformerFactory(clients.Spoke, 0),
		// Unbound and terminated pods take nothing from a node, so the API
		// server filters them out; a pod that terminates leaves the watch
		// as a deletion.
		pods: informers.NewSharedInformerFactoryWithOptions(clients.Spoke, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.AndSelectors(
					fields.OneTermNotEqualSelector("spec.nodeName", ""),
					fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
					fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
				).String()
			})),
	}
	inv := newInventoryWriter(clients.Hub, opts)
	c.inv = inv
	c.steps = []step{
		inv,
		newScoreWriter(clients.HubCluster, opts, ScoreName, func(st *v1alpha1.ClusterInventoryStatus) []clusterv1alpha1.AddOnPlacementScoreItem {
			return Scores(st, opts.ScoreReference)
		}),
	}
	if opts.UsageScore {
		c.steps = append(c.steps, newScoreWriter(clients.HubCluster, opts, UsageScoreName, UsageScores))
	}

	nodes := c.factory.Core().V1().Nodes().Informer()
	pods := c.pods.Core().V1().Pods().Informer()
	for _, inf := range []cache.SharedIndexInformer{nodes, pods} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return nil, fmt.Errorf("setting informer transform: %w", err)
		}
	}
	if _, err := nodes.AddEventHandler(handler.Funcs[*corev1.Node]{
		Add:    c.upsertNode,
		Update: func(_, n *corev1.Node) { c.upsertNode(n) },
		Delete: c.deleteNode,
	}); err != nil {
		return nil, fmt.Errorf("adding node handler: %w", err)
	}
	if _, err := pods.AddEventHandler(handler.Funcs[*corev1.Pod]{
		Add:    c.upsertPod,
		Update: func(_, p *corev1.Pod) { c.upsertPod(p) },
		Delete: c.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("adding pod handler: %w", err)
	}
	if c.unschedulable, err = newUnschedulablePods(clients.Spoke, c.enqueue); err != nil {
		return nil, err
	}
	c.synced = []cache.InformerSynced{nodes.HasSynced, pods.HasSynced, c.unschedulable.synced}
	if c.devices, err = newDevices(clients.Spoke, opts.DeviceIgnoredAttributes, c.enqueue); err != nil {
		return nil, err
	}
	c.nodeLister = c.factory.Core().V1().Nodes().Lister()
	if clients.SpokeDynamic != nil {
		if c.pools, err = newNodePools(clients.SpokeDynamic, clients.Spoke, opts.InstanceTypesConfigMap, nodes, c.nodeLister, c.enqueue); err != nil {
			return nil, err
		}
	}
	if opts.MachineGroups {
		if c.groups, err = newMachineGroups(clients.SpokeFleetfit, c.enqueue); err != nil {
			return nil, err
		}
	}

	// Only the cluster's own inventory: the agent may read nothing else on the hub.
	c.hub = fleetfitinformers.NewSharedInformerFactoryWithOptions(clients.Hub, 0,
		fleetfitinformers.WithNamespace(opts.ClusterName),
		fleetfitinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", opts.ClusterName).String()
		}))
	invs := c.hub.Fleetfit().V1alpha1().ClusterInventories()
	if _, err := invs.Informer().AddEventHandler(handler.Funcs[*v1alpha1.ClusterInventory]{
		Add:    c.onInventory,
		Update: func(_, inv *v1alpha1.ClusterInventory) { c.onInventory(inv) },
	}); err != nil {
		return nil, fmt.Errorf("adding inventory handler: %w", err)
	}
	c.hubSynced, c.hubLister = invs.Informer().HasSynced, invs.Lister()
	return c, nil
}

// Run follows the spoke and syncs the hub until ctx ends. It returns an
// error only when the informers cannot start; hub failures are logged and
// retried, never returned.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithValues("cluster", c.opts.ClusterName)
	ctx = klog.NewContext(ctx, logger)
	defer c.queue.ShutDown()

	c.factory.Start(ctx.Done())
	c.pods.Start(ctx.Done())
	c.unschedulable.factory.Start(ctx.Done())
	// The hub's informer is not waited for: a hub out of reach, or RBAC from before the
	// agent watched its inventory, must not stop the reports. Until it syncs, the spec comes
	// with the inventory the reporter writes.
	c.hub.Start(ctx.Done())
	defer c.factory.Shutdown()
	defer c.pods.Shutdown()
	defer c.unschedulable.factory.Shutdown()
	defer c.hub.Shutdown()
	if c.groups != nil {
		// Not waited for either: machine groups join the report when their
		// cache has synced, which asks for a sync.
		c.groups.start(ctx)
		defer c.groups.shutdown()
	}
	// Devices are not waited for with the nodes and pods either, only for a
	// while after them: an agent whose RBAC predates them still reports.
	c.devices.start(ctx)
	defer c.devices.shutdown()
	c.pools.start(ctx)
	defer c.pools.shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("timed out waiting for node and pod caches")
	}
	c.devices.waitForSync(ctx, deviceSyncWait)
	c.pools.waitForSync(ctx, poolSyncWait)
	logger.Info("Reporting inventory", "minInterval", c.opts.MinInterval)
	// The caches have synced, so the loop has none to wait for.
	workers.Loop{
		Name:  "reporter",
		Queue: c.queue,
		// The first report waits for the caches, so it is never a partial view.
		Seed:    func() int { c.queue.Add(syncKey); return 1 },
		Hold:    c.hold,
		Sync:    c.syncHub,
		Workers: 1,
	}.Run(ctx)
	return nil
}

// hold keeps syncs MinInterval apart, failed ones included: it returns how
// long a sync must still wait, or zero when it may start now, and then
// starts the next interval.
func (c *Controller) hold(string) time.Duration {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if wait := c.nextSync.Sub(now); wait > 0 {
		// An event raced with the previous sync; honour the interval.
		return wait
	}
	c.nextSync = now.Add(c.opts.MinInterval)
	return 0
}

// syncHub is the loop's Sync. A failure is retried with backoff from
// MinInterval; update conflicts among its errors mean that someone else (the
// hub writing an inventory's spec, a second agent during a rollout) updated
// an object since it was read, and the retry reads it again.
func (c *Controller) syncHub(ctx context.Context, key string) error {
	if err := c.sync(ctx); err != nil {
		return err
	}
	// Nothing may change on the spoke for a long time, but the placement
	// score expires: come back in time to renew it.
	c.queue.AddAfter(key, c.opts.ScoreValidity/2)
	c.syncsDone.Add(1)
	return nil
}

// sync takes the label keys the hub asks for, summarises the inventory and
// runs every step; a failing step does not stop the others, and all failures
// are returned together.
func (c *Controller) sync(ctx context.Context) error {
	asked, known := c.labelKeys()
	if known {
		c.takeLabelKeys(ctx, asked)
	}
	c.devices.apply(c.cluster)
	st := &syncState{report: c.cluster.Summarize(), now: c.opts.Clock.Now()}
	c.pools.apply(ctx, &st.report)
	st.report.MachineGroups, st.report.OmittedMachineGroups = c.groups.report()
	st.report.Unschedulable, st.report.OmittedUnschedulable = c.unschedulable.report()
	if c.opts.OnReport != nil {
		c.opts.OnReport(&st.report)
	}
	var errs []error
	for _, s := range c.steps {
		if err := s.sync(ctx, st); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.name(), err))
		}
	}
	if st.inventory != nil && !slices.Equal(st.inventory.Spec.LabelKeys, asked) {
		// The hub asked for other keys meanwhile: report them next.
		c.enqueue()
	}
	return errors.Join(errs...)
}

// labelKeys returns the keys the hub asks for: from the informer once it has
// synced, else from the inventory last written or read, else none (before
// the first report, which then asks again).
func (c *Controller) labelKeys() ([]string, bool) {
	if c.hubSynced() {
		inv, err := c.hubLister.ClusterInventories(c.opts.ClusterName).Get(c.opts.ClusterName)
		if err == nil {
			return inv.Spec.LabelKeys, true
		}
	}
	if last := c.inv.last; last != nil {
		return last.Spec.LabelKeys, true
	}
	return nil, false
}

// takeLabelKeys makes the inventory report the label keys the hub asks for.
// Keys it cannot take (the hub's schema refuses them, so only a hub without
// it could write them) are logged and the previous ones kept.
func (c *Controller) takeLabelKeys(ctx context.Context, keys []string) {
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing nodes to report new label keys")
		return
	}
	changed, omitted, err := c.cluster.SetFeatureLabelKeys(keys, nodes)
	if err != nil {
		klog.FromContext(ctx).Error(err, "The hub asks for label keys that cannot be reported; keeping the previous ones")
		return
	}
	if changed {
		klog.FromContext(ctx).V(logs.Changes).Info("Reporting the label keys the hub asks for", "keys", keys)
	}
	if len(omitted) > 0 && !slices.Equal(omitted, c.omittedKeys) {
		klog.FromContext(ctx).Info("Not reporting label keys whose nodes have too many values: requirements on them stay unknown on this cluster",
			"keys", omitted, "maxValues", inventory.MaxLabelKeyValues)
	}
	c.omittedKeys = omitted
}

// onInventory asks for a sync when the hub asks for label keys other than
// those reported, so that they are reported within one report interval.
func (c *Controller) onInventory(inv *v1alpha1.ClusterInventory) {
	if inv.Name != c.opts.ClusterName {
		return
	}
	var reported []string
	if r := inv.Status.ReportedLabels; r != nil {
		reported = r.Keys
	}
	if !slices.Equal(inv.Spec.LabelKeys, reported) {
		c.enqueue()
	}
}

// enqueue asks for a sync no earlier than MinInterval after the last one.
func (c *Controller) enqueue() {
	c.mu.Lock()
	wait := c.nextSync.Sub(c.opts.Clock.Now())
	c.mu.Unlock()
	c.queue.AddAfter(syncKey, wait)
}

func (c *Controller) upsertNode(n *corev1.Node) {
	c.cluster.UpsertNode(n)
	c.enqueue()
}

func (c *Controller) deleteNode(n *corev1.Node) {
	c.cluster.DeleteNode(n.Name)
	c.enqueue()
}

func (c *Controller) upsertPod(p *corev1.Pod) {
	c.cluster.UpsertPod(p)
	c.enqueue()
}

func (c *Controller) deletePod(p *corev1.Pod) {
	c.cluster.DeletePod(p.Namespace, p.Name)
	c.enqueue()
}

// stripManagedFields drops what the reporter never reads before an object
// enters the cache, which matters for clusters with many pods.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

// syncState is what one sync's steps share.
type syncState struct {
	report v1alpha1.ClusterInventoryStatus
	now    time.Time
	// inventory is the hub's ClusterInventory after the inventory step, nil
	// when that step failed.
	inventory *v1alpha1.ClusterInventory
}

// step is one thing the reporter keeps up to date on the hub. sync writes
// only when what it would write differs from what it last wrote, and returns
// an error only for failures worth retrying.
type step interface {
	name() string
	sync(ctx context.Context, st *syncState) error
}
