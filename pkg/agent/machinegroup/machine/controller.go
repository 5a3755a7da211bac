// Package machine is the machine controller of machine groups: for each
// machine type of a MachineGroup it keeps a headless Service and a
// StatefulSet of reservation pods, named <type>-<group>, that hold the
// type's machines on the group's pool nodes until guest pods take them, and
// it writes the group's status — the usage of each type and the Ready
// condition.
//
// A reservation StatefulSet has available − (used + waiting) replicas
// (machinegroup.ReservationReplicas): a new guest pod of the type makes it
// shrink, and the guest schedules onto the node the removed reservation pod
// frees. The controller never touches guest pods, and it never creates the
// group's MachineNodePool: the node pool controller does, and its Ready
// condition is what this controller reads of it.
package machine

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// Defaults of Options.
const (
	DefaultReservationImage = "registry.k8s.io/pause:3.10"
	// DefaultNamespace holds the reservation StatefulSets and Services: the
	// agent's own namespace, which install agent creates.
	DefaultNamespace = "fleetfit-agent"
)

// Index names.
const (
	// byNode indexes MachineGroups by the names of their pool nodes, so that a
	// node's allocatable reaches the groups whose fit check reads it.
	byNode = "fleetfit.io/machinegroup-node"
	// byMachineType indexes guest and reservation pods by podKey.
	byMachineType = "fleetfit.io/machinegroup-type"
)

// Options configure the controller; zero values take the defaults.
type Options struct {
	// ReservationImage is the image of the reservation pods' one container,
	// which must idle until stopped; DefaultReservationImage by default.
	ReservationImage string
	// Namespace holds the reservation StatefulSets and Services;
	// DefaultNamespace by default. It must exist.
	Namespace string
	// Clock stamps condition transitions; the real clock by default.
	Clock clock.PassiveClock
}

// Controller is the machine controller. Build it with New and start it with Run.
type Controller struct {
	kube   kubernetes.Interface
	client fleetfitclient.Interface
	opts   Options

	groups       fleetfitlisters.MachineGroupLister
	groupIndexer toolscache.Indexer
	pools        fleetfitlisters.MachineNodePoolLister
	statefulSets appslisters.StatefulSetLister
	services     corelisters.ServiceLister
	pods         toolscache.Indexer
	nodes        corelisters.NodeLister

	fleetfit fleetfitinformers.SharedInformerFactory
	reserved informers.SharedInformerFactory
	podsInf  informers.SharedInformerFactory
	nodesInf informers.SharedInformerFactory
	// optedIn caches the namespaces whose guests count (see countsAsGuest).
	optedIn   toolscache.Indexer
	nsInf     informers.SharedInformerFactory
	informers []toolscache.SharedIndexInformer
	// setupErr is an error from wiring the informers, returned by Run.
	setupErr error

	queue workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller with its own informers; nothing is contacted until Run.
//
// Pods are watched only with the label machines.fleetfit.io/pod-role set to
// guest or reservation, and StatefulSets and Services only in the
// reservation namespace with a machine-group label, so the agent never
// caches a cluster's other pods for this. Nodes are cached whole (without
// their managed fields and image lists): the fit check reads the pool
// nodes' allocatable, and pool nodes carry no label common to all of them.
func New(kube kubernetes.Interface, client fleetfitclient.Interface, opts Options) *Controller {
	if opts.ReservationImage == "" {
		opts.ReservationImage = DefaultReservationImage
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Controller{
		kube: kube, client: client, opts: opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workers.RateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "machinegroups"}),
		fleetfit: fleetfitinformers.NewSharedInformerFactory(client, 0),
		reserved: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithNamespace(opts.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = machinegroup.LabelMachineGroup })),
		podsInf: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = podSelector().String() })),
		nodesInf: informers.NewSharedInformerFactory(kube, 0),
		nsInf: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.LabelSelector = machinegroup.LabelInjectResource + "=" + machinegroup.InjectResourceEnabled
			})),
	}

	gi := c.fleetfit.Fleetfit().V1alpha1().MachineGroups()
	pi := c.fleetfit.Fleetfit().V1alpha1().MachineNodePools()
	si := c.reserved.Apps().V1().StatefulSets()
	vi := c.reserved.Core().V1().Services()
	podi := c.podsInf.Core().V1().Pods()
	ni := c.nodesInf.Core().V1().Nodes()
	nsi := c.nsInf.Core().V1().Namespaces()

	// Indexers and transforms must be set before the informers start, which
	// only Run does, so these do not fail; should they, Run says so.
	var errs []error
	errs = append(errs,
		gi.Informer().AddIndexers(toolscache.Indexers{byNode: machinegroup.PoolNodeIndex}),
		podi.Informer().AddIndexers(toolscache.Indexers{byMachineType: podIndex}))
	for _, inf := range []toolscache.SharedIndexInformer{podi.Informer(), ni.Informer(), si.Informer(), vi.Informer()} {
		errs = append(errs, inf.SetTransform(strip))
	}

	c.groups, c.groupIndexer = gi.Lister(), gi.Informer().GetIndexer()
	c.pools = pi.Lister()
	c.statefulSets, c.services = si.Lister(), vi.Lister()
	c.pods = podi.Informer().GetIndexer()
	c.nodes = ni.Lister()
	c.optedIn = nsi.Informer().GetIndexer()

	add := func(inf toolscache.SharedIndexInformer, h toolscache.ResourceEventHandler) {
		_, err := inf.AddEventHandler(h)
		errs = append(errs, err)
		c.informers = append(c.informers, inf)
	}
	add(gi.Informer(), c.groupHandler())
	add(pi.Informer(), handler.Funcs[*v1alpha1.MachineNodePool]{
		Add:    c.enqueuePool,
		Update: func(_, p *v1alpha1.MachineNodePool) { c.enqueuePool(p) },
		Delete: c.enqueuePool,
	})
	add(si.Informer(), labelledHandler[*appsv1.StatefulSet](c))
	add(vi.Informer(), handler.Funcs[*corev1.Service]{
		// A Service never changes on its own; only its removal or someone
		// else's edit needs a sync.
		Update: func(old, cur *corev1.Service) {
			if !equality.Semantic.DeepEqual(old.Spec.Selector, cur.Spec.Selector) || !equality.Semantic.DeepEqual(old.Labels, cur.Labels) {
				c.enqueueLabelled(cur)
			}
		},
		Delete: func(s *corev1.Service) { c.enqueueLabelled(s) },
	})
	add(podi.Informer(), c.podHandler())
	add(ni.Informer(), c.nodeHandler())
	// A namespace opting in or out changes which guests count, in any group.
	add(nsi.Informer(), handler.Funcs[*corev1.Namespace]{
		Add:    func(*corev1.Namespace) { c.enqueueAll() },
		Delete: func(*corev1.Namespace) { c.enqueueAll() },
	})
	if err := errors.Join(errs...); err != nil {
		c.setupErr = fmt.Errorf("wiring the machine controller's informers: %w", err)
	}
	return c
}

// podSelector selects guest and reservation pods.
func podSelector() labels.Selector {
	r, _ := labels.NewRequirement(machinegroup.LabelPodRole, selection.In, []string{machinegroup.PodRoleGuest, machinegroup.PodRoleReservation})
	return labels.NewSelector().Add(*r)
}

// Run starts the informers, waits for their caches and reconciles groups
// with the given number of workers until ctx ends, then returns nil; it
// returns at once the error of an informer New could not wire. Failed
// writes are logged and retried with backoff, never returned.
func (c *Controller) Run(ctx context.Context, workers int) error {
	if c.setupErr != nil {
		return c.setupErr
	}
	for _, f := range []interface{ Start(<-chan struct{}) }{c.fleetfit, c.reserved, c.podsInf, c.nodesInf, c.nsInf} {
		f.Start(ctx.Done())
	}
	defer c.fleetfit.Shutdown()
	defer c.reserved.Shutdown()
	defer c.podsInf.Shutdown()
	defer c.nodesInf.Shutdown()
	defer c.nsInf.Shutdown()
	synced := make([]toolscache.InformerSynced, 0, len(c.informers))
	for _, inf := range c.informers {
		synced = append(synced, inf.HasSynced)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		// Only the end of ctx stops the wait; an informer that cannot
		// list (no CRD, no RBAC) retries and logs meanwhile.
		return nil
	}
	c.loop(workers).Run(ctx)
	return nil
}

// loop is the controller's work queue with n workers.
func (c *Controller) loop(n int) workers.Loop {
	return workers.Loop{
		Name: "machinegroup", Queue: c.queue, Sync: c.sync, Workers: n,
		Seed: func() int {
			groups, _ := c.groups.List(labels.Everything())
			for _, g := range groups {
				c.queue.Add(g.Name)
			}
			return len(groups)
		},
	}
}

// enqueueAll queues every group.
func (c *Controller) enqueueAll() {
	groups, _ := c.groups.List(labels.Everything())
	for _, g := range groups {
		c.queue.Add(g.Name)
	}
}

// countsAsGuest says whether a guest pod may take a machine: only guests in
// namespaces labelled machines.fleetfit.io/inject-resource=enabled do, the
// namespaces the cluster admin opened to machine groups (the same opt-in the
// pod resource injector follows). A pod elsewhere that merely carries the
// guest labels takes nothing from the group's reservations.
func (c *Controller) countsAsGuest(p *corev1.Pod) bool {
	_, ok, _ := c.optedIn.GetByKey(p.Namespace)
	return ok
}

func (c *Controller) enqueue(group string) {
	if group != "" {
		c.queue.Add(group)
	}
}

func (c *Controller) groupHandler() toolscache.ResourceEventHandler {
	return handler.Funcs[*v1alpha1.MachineGroup]{
		Add: func(g *v1alpha1.MachineGroup) { c.enqueue(g.Name) },
		Update: func(old, cur *v1alpha1.MachineGroup) {
			// A spec change needs a sync, and so does a status someone else
			// changed, to put it back; our own status writes come back here
			// too and cost one sync that writes nothing. Resyncs and
			// metadata changes are ignored.
			if old.Generation != cur.Generation || !equality.Semantic.DeepEqual(old.Status, cur.Status) {
				c.enqueue(cur.Name)
			}
		},
		// The garbage collector removes what the group owned.
	}
}

func (c *Controller) enqueuePool(p *v1alpha1.MachineNodePool) {
	c.enqueue(p.Spec.MachineGroup)
}

func (c *Controller) enqueueLabelled(obj metav1.Object) {
	c.enqueue(obj.GetLabels()[machinegroup.LabelMachineGroup])
}

func labelledHandler[T metav1.Object](c *Controller) handler.Funcs[T] {
	return handler.Funcs[T]{
		Add:    func(o T) { c.enqueueLabelled(o) },
		Update: func(_, o T) { c.enqueueLabelled(o) },
		Delete: func(o T) { c.enqueueLabelled(o) },
	}
}

func (c *Controller) podHandler() toolscache.ResourceEventHandler {
	return handler.Funcs[*corev1.Pod]{
		Add: func(p *corev1.Pod) { c.enqueueLabelled(p) },
		Update: func(old, cur *corev1.Pod) {
			// Only a change of state moves the usage.
			if machinegroup.StateOf(old) != machinegroup.StateOf(cur) || old.Labels[machinegroup.LabelMachineType] != cur.Labels[machinegroup.LabelMachineType] ||
				old.Labels[machinegroup.LabelMachineGroup] != cur.Labels[machinegroup.LabelMachineGroup] {
				c.enqueueLabelled(old)
				c.enqueueLabelled(cur)
			}
		},
		Delete: func(p *corev1.Pod) { c.enqueueLabelled(p) },
	}
}

// nodeHandler requeues the groups a node is in when it comes or goes or its
// allocatable changes; heartbeats and other status updates are ignored.
func (c *Controller) nodeHandler() toolscache.ResourceEventHandler {
	onNode := func(n *corev1.Node) {
		objs, err := c.groupIndexer.ByIndex(byNode, n.Name)
		if err != nil {
			return
		}
		for _, o := range objs {
			if g, ok := o.(*v1alpha1.MachineGroup); ok {
				c.enqueue(g.Name)
			}
		}
	}
	return handler.Funcs[*corev1.Node]{
		Add: onNode,
		Update: func(old, cur *corev1.Node) {
			if !equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) {
				onNode(cur)
			}
		},
		Delete: onNode,
	}
}

// podKey is the byMachineType key of the pods of one role, group and machine type.
func podKey(role, group, machineType string) string {
	return role + "/" + group + "/" + machineType
}

// podIndex is the byMachineType index: a guest or reservation pod by its
// role, group and machine type.
func podIndex(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if role, group, machineType, ok := machinegroup.MachineOf(p); ok {
		return []string{podKey(role, group, machineType)}, nil
	}
	return nil, nil
}

// strip drops what the controller never reads before an object enters a cache.
func strip(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	if n, ok := obj.(*corev1.Node); ok {
		n.Status.Images = nil
	}
	return obj, nil
}
