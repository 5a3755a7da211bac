package reporter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	resourcelisters "k8s.io/client-go/listers/resource/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/apiserved"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
)

// deviceResources are the resources of resource.k8s.io/v1 the reporter
// reads; a cluster serves Dynamic Resource Allocation, as far as the
// reporter is concerned, when it serves all of them.
var deviceResources = []string{"resourceslices", "deviceclasses", "resourceclaims"}

// deviceSyncWait bounds how long the first report waits for the DRA caches
// once the node and pod caches have synced. They normally sync together; an
// agent whose RBAC predates devices never syncs them, and must still report
// the rest.
const deviceSyncWait = 10 * time.Second

// deviceState is what discovery said of the DRA API.
type deviceState int

const (
	// devicesUnknown: discovery has not run yet (before Run).
	devicesUnknown deviceState = iota
	// devicesNotServed: the cluster does not serve resource.k8s.io/v1.
	devicesNotServed
	// devicesServed: the cluster serves it, or discovery failed and the
	// informers were started anyway.
	devicesServed
)

// devices follows the spoke's Dynamic Resource Allocation objects —
// ResourceSlices, DeviceClasses and ResourceClaims — for status.devices and
// the device counts of node shapes (inventory.SummarizeDevices).
//
// What the report says of devices:
//   - the cluster serves resource.k8s.io/v1: the kinds of its devices, with
//     served: true, once the three caches have synced;
//   - the cluster does not serve it: {served: false} (which the API server
//     stores as devices: {}), so the hub can tell a cluster without DRA from
//     an agent older than the field;
//   - nil only while the agent does not know yet: before discovery, and
//     while the caches of a cluster that serves DRA have not synced (the
//     first report waits deviceSyncWait for them; an agent whose RBAC lacks
//     the DRA rules stays there and reports everything else).
//
// Discovery runs once, when the reporter starts: a cluster that starts
// serving the API later is followed after the agent restarts.
//
// Event handlers only mark the devices dirty and ask for a sync; the sync,
// which runs on the reporter's one worker at most once per MinInterval,
// recomputes them from the listers (apply). A burst of slice or claim
// events therefore costs one SummarizeDevices, and one write only when the
// report changed.
type devices struct {
	client  kubernetes.Interface
	ignored []string
	enqueue func()

	factory informers.SharedInformerFactory
	slices  resourcelisters.ResourceSliceLister
	classes resourcelisters.DeviceClassLister
	claims  resourcelisters.ResourceClaimLister
	synced  []cache.InformerSynced

	// state is set by start, before the reporter's worker runs.
	state deviceState
	// cachesSynced is closed when the caches have synced, or when start
	// gave up waiting for them because the context ended.
	cachesSynced chan struct{}
	// dirty says that apply must recompute the devices.
	dirty atomic.Bool
}

// newDevices builds the informers; nothing is contacted until start.
// ignored are the attribute names left out of kinds, nil for
// inventory.DefaultIgnoredDeviceAttributes; enqueue asks for a sync.
func newDevices(client kubernetes.Interface, ignored []string, enqueue func()) (*devices, error) {
	d := &devices{
		client:       client,
		ignored:      ignored,
		enqueue:      enqueue,
		factory:      informers.NewSharedInformerFactory(client, 0),
		cachesSynced: make(chan struct{}),
	}
	v1 := d.factory.Resource().V1()
	sliceInf, classInf, claimInf := v1.ResourceSlices().Informer(), v1.DeviceClasses().Informer(), v1.ResourceClaims().Informer()
	for _, inf := range []cache.SharedIndexInformer{sliceInf, classInf, claimInf} {
		if err := inf.SetTransform(stripManagedFields); err != nil {
			return nil, fmt.Errorf("setting informer transform: %w", err)
		}
	}
	// Slices have no status, and a class's status is not read: only specs
	// matter. Of a claim, only its allocation counts.
	if _, err := sliceInf.AddEventHandler(handler.Funcs[*resourcev1.ResourceSlice]{
		Add: func(*resourcev1.ResourceSlice) { d.changed() },
		Update: func(old, cur *resourcev1.ResourceSlice) {
			if !equality.Semantic.DeepEqual(old.Spec, cur.Spec) {
				d.changed()
			}
		},
		Delete: func(*resourcev1.ResourceSlice) { d.changed() },
	}); err != nil {
		return nil, fmt.Errorf("adding resource slice handler: %w", err)
	}
	if _, err := classInf.AddEventHandler(handler.Funcs[*resourcev1.DeviceClass]{
		Add: func(*resourcev1.DeviceClass) { d.changed() },
		Update: func(old, cur *resourcev1.DeviceClass) {
			if !equality.Semantic.DeepEqual(old.Spec, cur.Spec) {
				d.changed()
			}
		},
		Delete: func(*resourcev1.DeviceClass) { d.changed() },
	}); err != nil {
		return nil, fmt.Errorf("adding device class handler: %w", err)
	}
	if _, err := claimInf.AddEventHandler(handler.Funcs[*resourcev1.ResourceClaim]{
		Add: func(c *resourcev1.ResourceClaim) {
			if c.Status.Allocation != nil {
				d.changed()
			}
		},
		Update: func(old, cur *resourcev1.ResourceClaim) {
			if !equality.Semantic.DeepEqual(old.Status.Allocation, cur.Status.Allocation) {
				d.changed()
			}
		},
		Delete: func(c *resourcev1.ResourceClaim) {
			if c.Status.Allocation != nil {
				d.changed()
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("adding resource claim handler: %w", err)
	}
	d.slices, d.classes, d.claims = v1.ResourceSlices().Lister(), v1.DeviceClasses().Lister(), v1.ResourceClaims().Lister()
	d.synced = []cache.InformerSynced{sliceInf.HasSynced, classInf.HasSynced, claimInf.HasSynced}
	return d, nil
}

// DeviceAPIServed says whether the cluster behind disc serves the
// ResourceSlices, DeviceClasses and ResourceClaims of resource.k8s.io/v1;
// an error is a failed look-up, not an answer.
func DeviceAPIServed(disc discovery.ServerResourcesInterface) (bool, error) {
	gv := resourcev1.SchemeGroupVersion.String()
	for _, r := range deviceResources {
		served, err := apiserved.Served(disc, gv, r)
		if err != nil || !served {
			return false, err
		}
	}
	return true, nil
}

// changed marks the devices dirty and asks for a sync, which is due no
// earlier than MinInterval after the last one.
func (d *devices) changed() {
	d.dirty.Store(true)
	d.enqueue()
}

// start asks discovery whether the cluster serves the DRA API and, unless it
// says no, starts the informers; a failed look-up starts them anyway, and
// they retry. Once their caches have synced the devices are recomputed.
func (d *devices) start(ctx context.Context) {
	served, err := DeviceAPIServed(d.client.Discovery())
	switch {
	case err != nil:
		klog.FromContext(ctx).Error(err, "Looking up the Dynamic Resource Allocation API; following its objects anyway")
	case !served:
		klog.FromContext(ctx).Info("The cluster does not serve Dynamic Resource Allocation; reporting no devices", "groupVersion", resourcev1.SchemeGroupVersion.String())
		d.state = devicesNotServed
		close(d.cachesSynced)
		d.changed()
		return
	}
	d.state = devicesServed
	d.factory.Start(ctx.Done())
	go func() {
		defer close(d.cachesSynced)
		if cache.WaitForCacheSync(ctx.Done(), d.synced...) {
			// An empty cluster has no events to announce that the caches are
			// complete.
			d.changed()
		}
	}()
}

// waitForSync waits at most timeout for the caches, so that the first
// report has the devices; it logs when they are not there by then.
func (d *devices) waitForSync(ctx context.Context, timeout time.Duration) {
	if d.state != devicesServed {
		return
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-d.cachesSynced:
	case <-ctx.Done():
	case <-t.C:
		klog.FromContext(ctx).Info("Reporting without devices until ResourceSlices, DeviceClasses and ResourceClaims can be listed (is the agent's RBAC from deploy/agent current?)", "waited", timeout)
	}
}

// shutdown stops the informers, when started.
func (d *devices) shutdown() {
	if d.state == devicesServed {
		d.factory.Shutdown()
	}
}

// apply gives cluster the devices when they may have changed since it last
// did; only the reporter's worker calls it, before summarising.
func (d *devices) apply(cluster *inventory.Cluster) {
	switch d.state {
	case devicesNotServed:
		if d.dirty.Swap(false) {
			cluster.SetDevices(nil, &v1alpha1.ReportedDevices{Served: false})
		}
	case devicesServed:
		// Until the caches have synced the devices stay unknown; the
		// goroutine of start marks them dirty when they have.
		if !d.cachesComplete() || !d.dirty.Swap(false) {
			return
		}
		sum := inventory.SummarizeDevices(d.input())
		cluster.SetDevices(sum.Nodes, &sum.Report)
	}
}

func (d *devices) cachesComplete() bool {
	for _, s := range d.synced {
		if !s() {
			return false
		}
	}
	return true
}

// input reads the caches, sorted by name: listers return their objects in
// no particular order, and SummarizeDevices then gives the same answer for
// the same objects (the capacity of a kind is written as the first of its
// devices has it, and a pool's slice count is taken from its last slice).
func (d *devices) input() inventory.DeviceInput {
	// The listers of informers cannot fail.
	sl, _ := d.slices.List(labels.Everything())
	classes, _ := d.classes.List(labels.Everything())
	claims, _ := d.claims.List(labels.Everything())
	slices.SortFunc(sl, func(a, b *resourcev1.ResourceSlice) int { return strings.Compare(a.Name, b.Name) })
	return inventory.DeviceInput{Slices: sl, Classes: classes, Claims: claims, IgnoredAttributes: d.ignored}
}
