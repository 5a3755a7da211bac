// Package nodepool is the node pool controller of fleetfit-agent's machine
// groups. For every MachineGroup it keeps the group's MachineNodePool
// (`<group>-node-pool`, owned by the group) a copy of the group's pool, puts
// on each pool node what pkg/machinegroup says the group puts there (the group
// annotation, the `<machine type>=<group>` label, the node-pool=ready label
// while the node is Ready, and with taint: true the two NoSchedule taints), and
// reports each node's health and a Ready condition in the pool's status.
//
// It owns only what it adds. Labels and annotations are written with
// server-side apply under the field manager FieldManager, so a label or
// annotation anyone else set is never touched, and applying a node's complete
// desired set removes whatever the controller set before and no longer
// wants. Node taints are one atomic list, so the controller reads, edits and
// writes it back with the node's resourceVersion, touching only taints under
// the machine groups' prefix (machinegroup.IsNodePoolTaint).
//
// Everything is level-based: a node is synced from what the groups say now,
// not from events. A node annotated with a group whose pool no longer names it,
// or whose group is gone, is cleaned — also after a restart, as every
// annotated node is synced on start. No finalizer is needed: a deleted group's
// nodes keep its annotation until they are cleaned, and the annotation is what
// brings them back to the controller.
//
// A node named by two groups belongs to the one created first
// (machinegroup.NodeOwner); the other group's pool gets Ready=False naming the
// node and the owner, and nothing on the node changes for it. The pool's Ready
// condition is the contract with the machine controller, which mirrors it into
// the MachineGroup.
package nodepool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// FieldManager is the field manager of everything the controller writes: the
// labels and annotations it applies to nodes, and the MachineNodePools.
const FieldManager = "fleetfit-node-pool"

// Indexes of the informers' caches.
const (
	// byPoolNode indexes MachineGroups by the nodes their pools name.
	byPoolNode = "fleetfit.io/machinegroup-pool-node"
	// byGroupAnnotation indexes Nodes by the group of their annotation.
	byGroupAnnotation = "fleetfit.io/node-machine-group"
)

// Queue keys are a kind prefix and a name: a group's key syncs its
// MachineNodePool, a node's key syncs what is on the node. Neither kind of
// name contains a '/'.
const (
	groupKeyPrefix = "group/"
	nodeKeyPrefix  = "node/"
)

// Controller is the node pool controller. Build it with New and start it with Run.
type Controller struct {
	kube   kubernetes.Interface
	client fleetfitclient.Interface
	clock  clock.Clock

	kubeFactory     informers.SharedInformerFactory
	fleetfitFactory fleetfitinformers.SharedInformerFactory

	groups       fleetfitlisters.MachineGroupLister
	groupIndexer toolscache.Indexer
	pools        fleetfitlisters.MachineNodePoolLister
	nodes        corelisters.NodeLister
	nodeIndexer  toolscache.Indexer

	queue  workqueue.TypedRateLimitingInterface[string]
	synced []toolscache.InformerSynced
	// setupErr is an error from wiring the informers, returned by Run.
	setupErr error
}

// New builds the controller and its informers on the managed cluster; nothing
// is contacted until Run.
func New(kube kubernetes.Interface, client fleetfitclient.Interface) *Controller {
	c := &Controller{
		kube:            kube,
		client:          client,
		clock:           clock.RealClock{},
		kubeFactory:     informers.NewSharedInformerFactory(kube, 0),
		fleetfitFactory: fleetfitinformers.NewSharedInformerFactory(client, 0),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workers.RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "fleetfit-node-pool"}),
	}
	gi := c.fleetfitFactory.Fleetfit().V1alpha1().MachineGroups()
	pi := c.fleetfitFactory.Fleetfit().V1alpha1().MachineNodePools()
	ni := c.kubeFactory.Core().V1().Nodes()
	c.groups, c.pools, c.nodes = gi.Lister(), pi.Lister(), ni.Lister()
	c.groupIndexer, c.nodeIndexer = gi.Informer().GetIndexer(), ni.Informer().GetIndexer()

	var errs []error
	errs = append(errs,
		gi.Informer().AddIndexers(toolscache.Indexers{byPoolNode: machinegroup.PoolNodeIndex}),
		ni.Informer().AddIndexers(toolscache.Indexers{byGroupAnnotation: groupAnnotationIndex}),
		ni.Informer().SetTransform(dropNodeStatus),
	)
	for _, h := range []struct {
		informer toolscache.SharedIndexInformer
		handler  toolscache.ResourceEventHandler
	}{
		{gi.Informer(), c.groupHandler()},
		{pi.Informer(), c.poolHandler()},
		{ni.Informer(), c.nodeHandler()},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.synced = append(c.synced, reg.HasSynced)
	}
	if err := errors.Join(errs...); err != nil {
		c.setupErr = fmt.Errorf("wiring the node pool controller's informers: %w", err)
	}
	return c
}

// Run starts the informers, waits for their caches and syncs groups and nodes
// with the given number of workers until ctx ends. It returns an error only
// when the controller could not be wired; API failures are retried, never
// returned.
func (c *Controller) Run(ctx context.Context, workerCount int) error {
	if c.setupErr != nil {
		return c.setupErr
	}
	defer utilruntime.HandleCrashWithContext(ctx)
	c.kubeFactory.Start(ctx.Done())
	c.fleetfitFactory.Start(ctx.Done())
	defer c.kubeFactory.Shutdown()
	defer c.fleetfitFactory.Shutdown()
	workers.Loop{
		Name: "node-pool", Queue: c.queue, Synced: c.synced, Sync: c.sync, Workers: workerCount,
		// Every group and every node of interest was queued by the
		// informers' initial adds; Seed only counts them for the log.
		Seed: c.queue.Len,
	}.Run(ctx)
	return nil
}

// sync dispatches a key to the sync of its kind.
func (c *Controller) sync(ctx context.Context, key string) error {
	if name, ok := strings.CutPrefix(key, groupKeyPrefix); ok {
		return c.syncPool(ctx, name)
	}
	if name, ok := strings.CutPrefix(key, nodeKeyPrefix); ok {
		return c.syncNode(ctx, name)
	}
	klog.FromContext(ctx).Error(nil, "Dropping a key of unknown kind", "key", key)
	return nil
}

func (c *Controller) enqueueGroup(name string) { c.queue.Add(groupKeyPrefix + name) }

// enqueueNode queues the node and every group whose pool names it or that its
// annotation names: a change on one node may change its owner, its health in
// each pool, and the pools' conflicts.
func (c *Controller) enqueueNode(name string) {
	c.queue.Add(nodeKeyPrefix + name)
	for _, g := range c.groupsNaming(name) {
		c.enqueueGroup(g.Name)
	}
	if n, err := c.nodes.Get(name); err == nil {
		if g := n.Annotations[machinegroup.AnnotationMachineGroup]; g != "" {
			c.enqueueGroup(g)
		}
	}
}

// groupsNaming returns the groups whose pools name node, as the cache has them.
func (c *Controller) groupsNaming(node string) []*v1alpha1.MachineGroup {
	objs, err := c.groupIndexer.ByIndex(byPoolNode, node)
	if err != nil {
		return nil
	}
	out := make([]*v1alpha1.MachineGroup, 0, len(objs))
	for _, o := range objs {
		if g, ok := o.(*v1alpha1.MachineGroup); ok {
			out = append(out, g)
		}
	}
	return out
}

// groupHandler syncs a group's pool on every change and, when its pool or
// life changes, the nodes it names now and named before.
func (c *Controller) groupHandler() toolscache.ResourceEventHandler {
	nodesOf := func(g *v1alpha1.MachineGroup) sets.Set[string] {
		s := sets.New[string]()
		for _, e := range g.Spec.NodePools {
			s.Insert(e.Name)
		}
		return s
	}
	return handler.Funcs[*v1alpha1.MachineGroup]{
		Add: func(g *v1alpha1.MachineGroup) {
			c.enqueueGroup(g.Name)
			for n := range nodesOf(g) {
				c.enqueueNode(n)
			}
		},
		Update: func(old, g *v1alpha1.MachineGroup) {
			c.enqueueGroup(g.Name)
			if equality.Semantic.DeepEqual(old.Spec.NodePools, g.Spec.NodePools) &&
				(old.DeletionTimestamp == nil) == (g.DeletionTimestamp == nil) && old.UID == g.UID {
				return
			}
			for n := range nodesOf(old).Union(nodesOf(g)) {
				c.enqueueNode(n)
			}
		},
		Delete: func(g *v1alpha1.MachineGroup) {
			c.enqueueGroup(g.Name)
			for n := range nodesOf(g) {
				c.enqueueNode(n)
			}
			// Nodes annotated with the group that its last known state no
			// longer named, e.g. after a missed update.
			objs, _ := c.nodeIndexer.ByIndex(byGroupAnnotation, g.Name)
			for _, o := range objs {
				if n, ok := o.(*corev1.Node); ok {
					c.enqueueNode(n.Name)
				}
			}
		},
	}
}

// poolHandler syncs the group of a MachineNodePool that changed, so that a
// pool edited or deleted by someone else is put back.
func (c *Controller) poolHandler() toolscache.ResourceEventHandler {
	onPool := func(p *v1alpha1.MachineNodePool) {
		if g := p.Spec.MachineGroup; g != "" {
			c.enqueueGroup(g)
		}
	}
	return handler.Funcs[*v1alpha1.MachineNodePool]{
		Add:    onPool,
		Update: func(_, p *v1alpha1.MachineNodePool) { onPool(p) },
		Delete: onPool,
	}
}

// nodeHandler follows the nodes that are annotated with a group or named in a
// pool, and among their changes only those of labels, annotations and taints:
// a node's status heartbeats matter to no group.
func (c *Controller) nodeHandler() toolscache.ResourceEventHandler {
	onNode := func(n *corev1.Node) {
		if c.interesting(n) {
			c.enqueueNode(n.Name)
		}
	}
	return handler.Funcs[*corev1.Node]{
		Add: onNode,
		Update: func(old, n *corev1.Node) {
			if equality.Semantic.DeepEqual(old.Labels, n.Labels) &&
				equality.Semantic.DeepEqual(old.Annotations, n.Annotations) &&
				equality.Semantic.DeepEqual(old.Spec.Taints, n.Spec.Taints) {
				return
			}
			onNode(n)
		},
		// A deleted node is NotReady in the pools that name it; there is
		// nothing left on it to clean.
		Delete: func(n *corev1.Node) {
			for _, g := range c.groupsNaming(n.Name) {
				c.enqueueGroup(g.Name)
			}
		},
	}
}

// interesting says whether a node is the controller's business: annotated
// with a group, named in a pool, or carrying labels the controller applied
// (say, after someone removed the annotation by hand).
func (c *Controller) interesting(n *corev1.Node) bool {
	if _, ok := n.Annotations[machinegroup.AnnotationMachineGroup]; ok {
		return true
	}
	for _, f := range n.ManagedFields {
		if f.Manager == FieldManager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return len(c.groupsNaming(n.Name)) > 0
}

func groupAnnotationIndex(obj any) ([]string, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil, nil
	}
	if g := n.Annotations[machinegroup.AnnotationMachineGroup]; g != "" {
		return []string{g}, nil
	}
	return nil, nil
}

// dropNodeStatus keeps a node's status, its largest part (images, conditions,
// addresses), out of the cache: the controller reads only metadata (managed
// fields included, for what it applied) and taints, and an update of a Node
// ignores its status.
func dropNodeStatus(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		n.Status = corev1.NodeStatus{}
	}
	return obj, nil
}
