package reporter

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

const gpuDriver = "gpu.example.com"

// gpuClass selects every device of gpuDriver.
func gpuClass() *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: gpuDriver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + gpuDriver + `"`},
		}}},
	}
}

// gpuSlice publishes n alike A100s of 80Gi on node, in a pool of one slice
// named after the node; they differ by their index only.
func gpuSlice(node string, n int) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + gpuDriver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   gpuDriver,
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"model": {StringValue: ptr.To("A100")},
				"index": {IntValue: ptr.To(int64(i))},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}},
		})
	}
	return s
}

// gpuClaim is a claim of len(devices) GPUs, allocated the devices of node's pool.
func gpuClaim(name, node string, devices ...string) *resourcev1.ResourceClaim {
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: gpuDriver, Count: int64(len(devices))},
		}}}},
	}
	if len(devices) > 0 {
		c.Status.Allocation = &resourcev1.AllocationResult{}
		for _, d := range devices {
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
				resourcev1.DeviceRequestAllocationResult{Request: "gpus", Driver: gpuDriver, Pool: node, Device: d})
		}
	}
	return c
}

// serveDevices makes the fake spoke's discovery list the DRA API.
func serveDevices(spoke *k8sfake.Clientset) {
	var rs []metav1.APIResource
	for _, r := range deviceResources {
		rs = append(rs, metav1.APIResource{Name: r})
	}
	spoke.Resources = append(spoke.Resources, &metav1.APIResourceList{GroupVersion: resourcev1.SchemeGroupVersion.String(), APIResources: rs})
}

// deviceReporter runs a reporter over spoke with a fake clock and returns it
// with the hub, the count of inventory writes, the count of reports and the
// count of the spoke's watches.
type deviceReporter struct {
	c                        *Controller
	hub                      *fleetfitfake.Clientset
	writes, reports, watches *atomic.Int32
}

func runDeviceReporter(t *testing.T, clock *testingclock.FakeClock, minInterval time.Duration, spoke *k8sfake.Clientset) deviceReporter {
	t.Helper()
	r := deviceReporter{hub: fleetfitfake.NewSimpleClientset(), writes: new(atomic.Int32), reports: new(atomic.Int32), watches: new(atomic.Int32)}
	// The fake API server drops events between an informer's list and its
	// watch; count the watches so that objects change only after them.
	spoke.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := spoke.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return false, nil, err
		}
		r.watches.Add(1)
		return true, w, nil
	})
	r.hub.PrependReactor("update", "clusterinventories", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "status" {
			r.writes.Add(1)
		}
		return false, nil, nil
	})
	var err error
	r.c, err = New(Clients{Spoke: spoke, Hub: r.hub, HubCluster: clusterfake.NewSimpleClientset()}, Options{
		ClusterName: "cluster1", Inventory: inventory.DefaultConfig(), MinInterval: minInterval, Clock: clock,
		OnReport: func(*v1alpha1.ClusterInventoryStatus) { r.reports.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	done := make(chan error, 1)
	go func() { done <- r.c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return r
}

func (r deviceReporter) inventory(t *testing.T) *v1alpha1.ClusterInventory {
	t.Helper()
	inv, err := r.hub.FleetfitV1alpha1().ClusterInventories("cluster1").Get(t.Context(), "cluster1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// deviceCounts returns, for the only node shape of st, its allocatable and
// free count of resource name.
func deviceCounts(t *testing.T, st *v1alpha1.ClusterInventoryStatus, name string) (alloc, free int64) {
	t.Helper()
	if len(st.NodeShapes) != 1 {
		t.Fatalf("%d node shapes, want 1: %+v", len(st.NodeShapes), st.NodeShapes)
	}
	s := st.NodeShapes[0]
	a := s.Allocatable[corev1.ResourceName(name)]
	if len(s.Free) != 1 {
		t.Fatalf("%d free vectors, want 1: %+v", len(s.Free), s.Free)
	}
	f := s.Free[0].Resources[corev1.ResourceName(name)]
	return a.Value(), f.Value()
}

// TestReportsDevices checks, with a fake clock, that a cluster serving DRA
// reports its published devices as one kind in status.devices and counts
// them in the node shape, that a claim's allocation takes devices from the
// free count at the next interval, and that recomputing unchanged devices
// writes nothing.
func TestReportsDevices(t *testing.T) {
	minInterval := 5 * time.Second
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	spoke := k8sfake.NewClientset(node("n1", "16", ""), gpuClass(), gpuSlice("n1", 4))
	serveDevices(spoke)
	r := runDeviceReporter(t, clock, minInterval, spoke)

	poll(t, "the first write", func() bool { return r.writes.Load() == 1 })
	poll(t, "the spoke's watches", func() bool { return r.watches.Load() == spokeWatches+int32(len(deviceResources)) })
	st := r.inventory(t).Status
	if st.Devices == nil || !st.Devices.Served || len(st.Devices.Kinds) != 1 {
		t.Fatalf("devices of the first report: %+v, want one kind served", st.Devices)
	}
	kind := st.Devices.Kinds[0]
	wantKind := v1alpha1.DeviceKind{
		Driver:     gpuDriver,
		Classes:    []string{gpuDriver},
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr.To("A100")}},
		Capacity:   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}},
	}
	wantKind.Name = inventory.DeviceKindName(&wantKind)
	if diff := cmp.Diff(wantKind, kind, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("reported kind (-want,+got):\n%s", diff)
	}
	if !strings.HasPrefix(kind.Name, v1alpha1.DeviceResourcePrefix+"gpu-") {
		t.Errorf("kind name %q, want it under %sgpu-", kind.Name, v1alpha1.DeviceResourcePrefix)
	}
	if diff := cmp.Diff(inventory.DefaultIgnoredDeviceAttributes, st.Devices.IgnoredAttributes, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("ignored attributes (-want,+got):\n%s", diff)
	}
	if alloc, free := deviceCounts(t, &st, kind.Name); alloc != 4 || free != 4 {
		t.Errorf("node shape: %d allocatable, %d free of the kind; want 4, 4", alloc, free)
	}

	// A claim is allocated two of the GPUs: at the next interval two are free.
	claims := spoke.ResourceV1().ResourceClaims("default")
	claim, err := claims.Create(t.Context(), gpuClaim("train", "n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Status = gpuClaim("train", "n1", "gpu-0", "gpu-2").Status
	if _, err := claims.UpdateStatus(t.Context(), claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the informer to deliver the allocation", func() bool {
		got, err := r.c.devices.claims.ResourceClaims("default").Get("train")
		return err == nil && got.Status.Allocation != nil
	})
	clock.Step(minInterval)
	poll(t, "the allocation written", func() bool { return r.writes.Load() == 2 })
	st = r.inventory(t).Status
	if alloc, free := deviceCounts(t, &st, kind.Name); alloc != 4 || free != 2 {
		t.Errorf("node shape after the allocation: %d allocatable, %d free of the kind; want 4, 2", alloc, free)
	}
	if st.Revision != 2 {
		t.Errorf("revision %d after the allocation, want 2", st.Revision)
	}

	// The devices are recomputed with nothing changed: a sync, and no write.
	reports := r.reports.Load()
	r.c.devices.changed()
	clock.Step(minInterval)
	poll(t, "a sync that recomputed the devices", func() bool { return r.reports.Load() == reports+1 })
	if r.c.devices.dirty.Load() {
		t.Error("the devices are still dirty after a sync")
	}
	if got := r.writes.Load(); got != 2 {
		t.Errorf("writes after recomputing unchanged devices: %d, want 2", got)
	}
}

// TestDevicesNotServed checks that a cluster without resource.k8s.io/v1
// reports devices {served: false}, opens no watch on it, and reports its
// nodes as before.
func TestDevicesNotServed(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	// The fake serves every type it knows; only discovery says what the
	// cluster serves, and it lists nothing here.
	spoke := k8sfake.NewClientset(node("n1", "16", ""), gpuClass(), gpuSlice("n1", 4))
	r := runDeviceReporter(t, clock, time.Second, spoke)

	poll(t, "the first write", func() bool { return r.writes.Load() == 1 })
	poll(t, "the spoke's watches", func() bool { return r.watches.Load() == spokeWatches })
	st := r.inventory(t).Status
	if diff := cmp.Diff(&v1alpha1.ReportedDevices{}, st.Devices); diff != "" {
		t.Errorf("devices of a cluster without DRA (-want,+got):\n%s", diff)
	}
	if st.NodeCount != 1 || len(st.NodeShapes) != 1 {
		t.Fatalf("nodeCount %d, %d shapes; want 1, 1", st.NodeCount, len(st.NodeShapes))
	}
	for name := range st.NodeShapes[0].Allocatable {
		if inventory.IsDeviceResource(name) {
			t.Errorf("node shape of a cluster without DRA has %s", name)
		}
	}
	// Later syncs keep it so, and write nothing new.
	clock.Step(time.Second)
	r.c.enqueue()
	poll(t, "a second report", func() bool { return r.reports.Load() >= 2 })
	if got := r.writes.Load(); got != 1 {
		t.Errorf("writes after a second sync: %d, want 1", got)
	}
	if got := r.watches.Load(); got != spokeWatches {
		t.Errorf("%d watches on the spoke, want %d", got, spokeWatches)
	}
}
