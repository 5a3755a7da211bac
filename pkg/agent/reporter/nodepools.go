package reporter

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/apiserved"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/textcap"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
)

// NodePoolResource is Karpenter's NodePool API, which the reporter follows
// where the cluster serves it.
var NodePoolResource = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}

// The agent's catalogue of instance types.
const (
	// DefaultInstanceTypesConfigMap is the name of the ConfigMap, in the
	// agent's namespace, that lists the instance types the cluster's pools
	// can launch.
	DefaultInstanceTypesConfigMap = "fleetfit-instance-types"
	// InstanceTypesKey is the ConfigMap's key that holds them: a JSON list of
	// inventory.InstanceType ({name, allocatable, labels}, or the
	// {name, resources} entries of Karpenter's kwok provider).
	InstanceTypesKey = "instance-types.json"
)

// ProviderKarpenter is ReportedNodePool.Provider of a Karpenter NodePool.
const ProviderKarpenter = "karpenter"

// poolSyncWait bounds how long the first report waits for the NodePool and
// ConfigMap caches once the node and pod caches have synced; an agent whose
// RBAC predates NodePools never syncs them, and must still report the rest.
const poolSyncWait = 10 * time.Second

// maxPoolMessage is ReportedNodePool.Message's bound.
const maxPoolMessage = 512

// poolState is what discovery said of the NodePool API.
type poolState int

const (
	// poolsUnknown: discovery has not run yet (before Run).
	poolsUnknown poolState = iota
	// poolsNotServed: the cluster does not serve karpenter.sh/v1 NodePools.
	poolsNotServed
	// poolsServed: it does, or discovery failed and the informers were
	// started anyway.
	poolsServed
)

// nodePools follows the spoke's Karpenter NodePools, the agent's ConfigMap
// of instance types and the nodes the pools launched, for status.nodePools
// (inventory.SummarizeNodePools).
//
// What the report says of pools:
//   - the cluster serves karpenter.sh/v1 NodePools: each pool, once their
//     cache has synced, with the shapes of the ConfigMap's instance types
//     its requirements admit, else those of the nodes it launched
//     (labelled karpenter.sh/nodepool);
//   - otherwise, and until the cache has synced, none.
//
// Discovery runs once, when the reporter starts: a cluster that gets
// Karpenter's CRDs later is followed after the agent restarts.
//
// Event handlers mark the pools dirty (and the pool and ConfigMap handlers
// ask for a sync; every node event does already); the sync recomputes them
// when dirty, or when the labels the report covers changed (apply), so a
// report that does not change costs nothing and writes nothing.
type nodePools struct {
	kube    kubernetes.Interface
	enqueue func()
	// catalogue names the ConfigMap of instance types; an empty Name reads
	// none.
	catalogue types.NamespacedName

	poolFactory dynamicinformer.DynamicSharedInformerFactory
	pools       cache.GenericLister
	poolSynced  cache.InformerSynced
	cmFactory   informers.SharedInformerFactory // nil without a catalogue
	configMaps  corelisters.ConfigMapLister
	cmSynced    cache.InformerSynced
	nodes       corelisters.NodeLister

	// state is set by start, before the reporter's worker runs.
	state poolState
	// cachesSynced is closed when the caches have synced, or when start
	// gave up waiting for them because the context ended.
	cachesSynced chan struct{}
	dirty        atomic.Bool

	// Only the reporter's worker reads and writes these: the last summary,
	// the labels it was filtered with, and the last complaint about the
	// catalogue, logged when it changes.
	report       []v1alpha1.ReportedNodePool
	omitted      int32
	reportedWith *v1alpha1.ReportedLabels
	computed     bool
	complaint    string
}

// newNodePools builds the informers; nothing is contacted until start. It
// adds a handler to the reporter's node informer, whose lister it reads.
func newNodePools(dyn dynamic.Interface, kube kubernetes.Interface, catalogue types.NamespacedName,
	nodeInformer cache.SharedIndexInformer, nodes corelisters.NodeLister, enqueue func()) (*nodePools, error) {
	p := &nodePools{
		kube: kube, enqueue: enqueue, catalogue: catalogue, nodes: nodes,
		poolFactory:  dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		cachesSynced: make(chan struct{}),
	}
	gi := p.poolFactory.ForResource(NodePoolResource)
	inf := gi.Informer()
	if err := inf.SetTransform(stripManagedFields); err != nil {
		return nil, fmt.Errorf("setting informer transform: %w", err)
	}
	// Only what the report reads of a pool matters; Karpenter updates its
	// pools' status for much else.
	if _, err := inf.AddEventHandler(handler.Funcs[*unstructured.Unstructured]{
		Add: func(*unstructured.Unstructured) { p.changed() },
		Update: func(old, cur *unstructured.Unstructured) {
			a, errA := nodePoolInput(old)
			b, errB := nodePoolInput(cur)
			if errA != nil || errB != nil || !equality.Semantic.DeepEqual(a, b) {
				p.changed()
			}
		},
		Delete: func(*unstructured.Unstructured) { p.changed() },
	}); err != nil {
		return nil, fmt.Errorf("adding node pool handler: %w", err)
	}
	p.pools, p.poolSynced = gi.Lister(), inf.HasSynced

	if catalogue.Name != "" {
		p.cmFactory = informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithNamespace(catalogue.Namespace),
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("metadata.name", catalogue.Name).String()
			}))
		cmi := p.cmFactory.Core().V1().ConfigMaps()
		if err := cmi.Informer().SetTransform(stripManagedFields); err != nil {
			return nil, fmt.Errorf("setting informer transform: %w", err)
		}
		if _, err := cmi.Informer().AddEventHandler(handler.Funcs[*corev1.ConfigMap]{
			Add: func(*corev1.ConfigMap) { p.changed() },
			Update: func(old, cur *corev1.ConfigMap) {
				a, hadKey := old.Data[InstanceTypesKey]
				b, hasKey := cur.Data[InstanceTypesKey]
				if a != b || hadKey != hasKey {
					p.changed()
				}
			},
			Delete: func(*corev1.ConfigMap) { p.changed() },
		}); err != nil {
			return nil, fmt.Errorf("adding instance-type ConfigMap handler: %w", err)
		}
		p.configMaps, p.cmSynced = cmi.Lister(), cmi.Informer().HasSynced
	}

	// The nodes a pool launched give its shapes when there is no
	// catalogue: their labels and allocatable. The reporter's own handler
	// asks for the sync.
	if _, err := nodeInformer.AddEventHandler(handler.Funcs[*corev1.Node]{
		Add: func(n *corev1.Node) {
			if inPool(n) {
				p.dirty.Store(true)
			}
		},
		Update: func(old, cur *corev1.Node) {
			if (inPool(old) || inPool(cur)) && (!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
				!equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable)) {
				p.dirty.Store(true)
			}
		},
		Delete: func(n *corev1.Node) {
			if inPool(n) {
				p.dirty.Store(true)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("adding node pool node handler: %w", err)
	}
	return p, nil
}

func inPool(n *corev1.Node) bool {
	_, ok := n.Labels[inventory.LabelKarpenterNodePool]
	return ok
}

// NodePoolsServed says whether the cluster behind disc serves Karpenter's
// karpenter.sh/v1 NodePools; an error is a failed look-up, not an answer.
func NodePoolsServed(disc discovery.ServerResourcesInterface) (bool, error) {
	return apiserved.Served(disc, NodePoolResource.GroupVersion().String(), NodePoolResource.Resource)
}

// changed marks the pools dirty and asks for a sync.
func (p *nodePools) changed() {
	p.dirty.Store(true)
	p.enqueue()
}

// start asks discovery whether the cluster serves NodePools and, unless it
// says no, starts the informers; a failed look-up starts them anyway, and
// they retry.
func (p *nodePools) start(ctx context.Context) {
	if p == nil {
		return
	}
	served, err := NodePoolsServed(p.kube.Discovery())
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Looking up Karpenter's NodePool API; following NodePools anyway")
	case !served:
		klog.FromContext(ctx).Info("The cluster does not serve Karpenter's NodePools; reporting no node pools", "groupVersion", NodePoolResource.GroupVersion().String())
		p.state = poolsNotServed
		close(p.cachesSynced)
		return
	}
	p.state = poolsServed
	p.poolFactory.Start(ctx.Done())
	synced := []cache.InformerSynced{p.poolSynced}
	if p.cmFactory != nil {
		p.cmFactory.Start(ctx.Done())
		synced = append(synced, p.cmSynced)
	}
	// Once both caches have synced, the pools are recomputed: the first
	// report waits for them a while, but a ConfigMap that cannot be listed
	// yet (the agent's RBAC) is taken up whenever it can.
	go func() {
		defer close(p.cachesSynced)
		if cache.WaitForCacheSync(ctx.Done(), synced...) {
			p.changed()
		}
	}()
}

// waitForSync waits at most timeout for the caches, so that the first
// report has the pools; it logs when they are not there by then.
func (p *nodePools) waitForSync(ctx context.Context, timeout time.Duration) {
	if p == nil || p.state != poolsServed {
		return
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.cachesSynced:
	case <-ctx.Done():
	case <-t.C:
		klog.FromContext(ctx).Info("Reporting without node pools until NodePools (and the instance-type ConfigMap) can be listed (is the agent's RBAC from deploy/agent current?)",
			"waited", timeout, "configMap", p.catalogue.String())
	}
}

// shutdown stops the informers, when started.
func (p *nodePools) shutdown() {
	if p == nil || p.state != poolsServed {
		return
	}
	p.poolFactory.Shutdown()
	if p.cmFactory != nil {
		p.cmFactory.Shutdown()
	}
}

// apply sets the report's node pools: none unless the cluster serves
// NodePools and their cache has synced; recomputed when something they
// depend on changed. Only the reporter's worker calls it, after Summarize
// (whose reported labels filter the pools' labels as they do the nodes').
func (p *nodePools) apply(ctx context.Context, st *v1alpha1.ClusterInventoryStatus) {
	if p == nil || p.state != poolsServed || !p.poolSynced() {
		return
	}
	dirty := p.dirty.Swap(false)
	if dirty || !p.computed || !equality.Semantic.DeepEqual(p.reportedWith, st.ReportedLabels) {
		p.report, p.omitted = p.summarize(ctx, st.ReportedLabels)
		p.reportedWith, p.computed = st.ReportedLabels.DeepCopy(), true
	}
	st.NodePools, st.OmittedNodePools = nil, p.omitted
	for i := range p.report {
		st.NodePools = append(st.NodePools, *p.report[i].DeepCopy())
	}
}

// summarize reads the caches and summarises the pools.
func (p *nodePools) summarize(ctx context.Context, reported *v1alpha1.ReportedLabels) ([]v1alpha1.ReportedNodePool, int32) {
	// The listers of informers cannot fail.
	objs, _ := p.pools.List(labels.Everything())
	inputs := make([]inventory.NodePoolInput, 0, len(objs))
	unread := map[string]string{}
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		in, err := nodePoolInput(u)
		if err != nil {
			// Reported as not ready, so that the hub counts no room in it,
			// with what went wrong.
			in = inventory.NodePoolInput{Name: u.GetName(), Provider: ProviderKarpenter}
			unread[in.Name] = "the NodePool could not be read: " + err.Error()
		}
		inputs = append(inputs, in)
	}
	types, complaint := p.instanceTypes()
	if complaint != p.complaint {
		if complaint != "" {
			klog.FromContext(ctx).Info("Not using the instance-type catalogue: node pools take their shapes from the nodes they launched", "problem", complaint)
		} else if p.complaint != "" {
			klog.FromContext(ctx).Info("Using the instance-type catalogue again", "configMap", p.catalogue.String())
		}
		p.complaint = complaint
	}
	var nodes []*corev1.Node
	if len(types) == 0 && len(inputs) > 0 {
		req, _ := labels.NewRequirement(inventory.LabelKarpenterNodePool, selection.Exists, nil)
		nodes, _ = p.nodes.List(labels.NewSelector().Add(*req))
		// Listers return objects in no particular order; SummarizeNodePools
		// takes a pool's shape of an instance type from the first node of it.
		slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	}
	out, omitted := inventory.SummarizeNodePools(inputs, types, nodes, reported.Reports)
	for i := range out {
		msgs := []string{unread[out[i].Name]}
		if out[i].ShapesFrom != v1alpha1.ShapesFromConfigMap {
			msgs = append(msgs, complaint)
		}
		msgs = append(msgs, out[i].Message)
		msgs = slices.DeleteFunc(msgs, func(s string) bool { return s == "" })
		out[i].Message = textcap.Truncate(strings.Join(msgs, "; "), maxPoolMessage)
	}
	return out, omitted
}

// instanceTypes reads the catalogue: nil without one, and then what is wrong
// with it, if anything (a ConfigMap that does not exist is no complaint).
func (p *nodePools) instanceTypes() ([]inventory.InstanceType, string) {
	if p.cmFactory == nil {
		return nil, ""
	}
	where := "ConfigMap " + p.catalogue.String()
	if !p.cmSynced() {
		return nil, where + " is not read yet"
	}
	cm, err := p.configMaps.ConfigMaps(p.catalogue.Namespace).Get(p.catalogue.Name)
	if apierrors.IsNotFound(err) {
		return nil, ""
	}
	if err != nil {
		return nil, fmt.Sprintf("reading %s: %v", where, err)
	}
	raw, ok := cm.Data[InstanceTypesKey]
	if !ok {
		return nil, fmt.Sprintf("%s has no key %s", where, InstanceTypesKey)
	}
	types, err := ParseInstanceTypes([]byte(raw))
	if err != nil {
		return nil, fmt.Sprintf("%s, key %s: %v", where, InstanceTypesKey, err)
	}
	return types, ""
}

// ParseInstanceTypes reads a catalogue of instance types: a JSON list of
// {name, allocatable, labels}, or of the {name, resources} entries of
// Karpenter's kwok provider (whose other fields are ignored). Every entry
// needs a name of its own and allocatable or resources.
func ParseInstanceTypes(raw []byte) ([]inventory.InstanceType, error) {
	var types []inventory.InstanceType
	if err := json.Unmarshal(raw, &types); err != nil {
		return nil, fmt.Errorf("not a JSON list of instance types: %w", err)
	}
	seen := map[string]bool{}
	for i, t := range types {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("entry %d has no name", i)
		case seen[t.Name]:
			return nil, fmt.Errorf("instance type %q is listed twice", t.Name)
		case len(t.Allocatable) == 0 && len(t.Resources) == 0:
			return nil, fmt.Errorf("instance type %q has neither allocatable nor resources", t.Name)
		}
		seen[t.Name] = true
	}
	return types, nil
}

// karpenterNodePool is what the reporter reads of a karpenter.sh/v1 NodePool.
type karpenterNodePool struct {
	Spec struct {
		Template struct {
			Metadata struct {
				Labels map[string]string `json:"labels,omitempty"`
			} `json:"metadata"`
			Spec struct {
				Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
				// Taints only: startup taints leave before pods are scheduled.
				Taints []corev1.Taint `json:"taints,omitempty"`
			} `json:"spec"`
		} `json:"template"`
		Limits corev1.ResourceList `json:"limits,omitempty"`
	} `json:"spec"`
	Status struct {
		Resources  corev1.ResourceList `json:"resources,omitempty"`
		Conditions []metav1.Condition  `json:"conditions,omitempty"`
	} `json:"status"`
}

// nodePoolInput reads a NodePool: its template's labels, requirements and
// taints, its limits, its usage (status.resources) and its Ready condition.
func nodePoolInput(u *unstructured.Unstructured) (inventory.NodePoolInput, error) {
	var np karpenterNodePool
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &np); err != nil {
		return inventory.NodePoolInput{}, err
	}
	t := &np.Spec.Template
	return inventory.NodePoolInput{
		Name:         u.GetName(),
		Provider:     ProviderKarpenter,
		Ready:        meta.IsStatusConditionTrue(np.Status.Conditions, "Ready"),
		Labels:       t.Metadata.Labels,
		Requirements: t.Spec.Requirements,
		Taints:       t.Spec.Taints,
		Limits:       np.Spec.Limits,
		Usage:        np.Status.Resources,
	}, nil
}
