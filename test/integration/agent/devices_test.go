package agent

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// devicesNS holds this file's ResourceClaims on the spoke.
const devicesNS = "devices-test"

// TestAgentReportsDevices runs cluster1's agent with its restricted identities (so the DRA
// rules of deploy/agent are exercised) over a spoke whose kube-apiserver serves
// resource.k8s.io/v1, publishes four alike GPUs on a node with a ResourceSlice, and checks
// that the hub's ClusterInventory reports them as one kind of the DeviceClass counted in the
// node's shape; then a ResourceClaim is allocated two of them and the shape's free count drops
// to two; and that recomputing the devices after a change the report does not show writes
// nothing.
func TestAgentReportsDevices(t *testing.T) {
	ctx := t.Context()
	cluster := framework.SpokeName(0)
	spoke := fleet.Spokes[0].AdminClient()
	hub := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig())

	// kube-apiserver serves resource.k8s.io/v1 by default from 1.34 on; the
	// framework passes no --runtime-config.
	served, err := reporter.DeviceAPIServed(spoke.Discovery())
	if err != nil {
		t.Fatal(err)
	}
	if !served {
		t.Fatal("the spoke's kube-apiserver does not serve resource.k8s.io/v1 (resourceslices, deviceclasses, resourceclaims)")
	}

	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := framework.ApplyAgentRBAC(ctx, fleet.Hub, fleet.Spokes[0], cluster); err != nil {
		t.Fatal(err)
	}
	if _, err := spoke.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: devicesNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	const (
		node   = "dra-gpu-0"
		driver = "gpu.example.com"
	)
	if err := framework.CreateNode(ctx, spoke, ut.MakeNode(node).Resource("cpu", "16").Resource("memory", "64Gi").Obj()); err != nil {
		t.Fatal(err)
	}
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`},
		}}},
	}
	if _, err := spoke.ResourceV1().DeviceClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for i := range 4 {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{
			Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
				"model": {StringValue: ptr.To("A100")},
				// Ignored by default: it tells the four apart.
				"index": {IntValue: ptr.To(int64(i))},
			},
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("80Gi")}},
		})
	}
	if _, err := spoke.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claims := spoke.ResourceV1().ResourceClaims(devicesNS)
	t.Cleanup(func() {
		// The spoke is shared: leave it without devices. The claim goes
		// first, as a pod would before its node.
		ctx := context.Background()
		_ = claims.Delete(ctx, "train", metav1.DeleteOptions{})
		_ = spoke.ResourceV1().ResourceSlices().Delete(ctx, slice.Name, metav1.DeleteOptions{})
		_ = spoke.ResourceV1().DeviceClasses().Delete(ctx, class.Name, metav1.DeleteOptions{})
		_ = spoke.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
	})

	var reports atomic.Int32
	startAgent(t, 0, func(o *reporter.Options) {
		o.OnReport = func(*v1alpha1.ClusterInventoryStatus) { reports.Add(1) }
	})

	// gpus waits until the hub reports one kind of the class, counted 4 in
	// the shape of node with free of them free, and returns the kind.
	gpus := func(free int64) v1alpha1.DeviceKind {
		t.Helper()
		var kind v1alpha1.DeviceKind
		framework.Eventually(t, func(ctx context.Context) error {
			inv, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
			if err != nil {
				return err
			}
			d := inv.Status.Devices
			if d == nil || !d.Served || len(d.Kinds) != 1 {
				return fmt.Errorf("devices %+v, want one kind served", d)
			}
			kind = d.Kinds[0]
			if kind.Driver != driver || len(kind.Classes) != 1 || kind.Classes[0] != driver {
				return fmt.Errorf("kind %+v, want driver and classes [%s]", kind, driver)
			}
			name := corev1.ResourceName(kind.Name)
			for _, s := range inv.Status.NodeShapes {
				alloc, ok := s.Allocatable[name]
				if !ok {
					continue
				}
				if s.NodeCount != 1 || alloc.Value() != 4 || len(s.Free) != 1 {
					return fmt.Errorf("shape %s: %d nodes, %s allocatable of the kind, %d free vectors; want 1, 4, 1", s.Name, s.NodeCount, alloc.String(), len(s.Free))
				}
				if got := s.Free[0].Resources[name]; got.Value() != free {
					return fmt.Errorf("shape %s: %s of the kind free, want %d", s.Name, got.String(), free)
				}
				return nil
			}
			return errors.New("no node shape counts the kind")
		})
		return kind
	}
	kind := gpus(4)
	if _, ok := kind.Attributes["index"]; ok {
		t.Errorf("the kind keeps the ignored attribute index: %+v", kind.Attributes)
	}
	if m := kind.Attributes["model"]; m.StringValue == nil || *m.StringValue != "A100" {
		t.Errorf("the kind's model: %+v, want A100", m)
	}
	if c := kind.Capacity["memory"]; c.Value.Cmp(resource.MustParse("80Gi")) != 0 {
		t.Errorf("the kind's memory: %s, want 80Gi", c.Value.String())
	}
	waitForReport(t, spoke, hub, cluster)

	// A claim allocated two of the GPUs, through the status subresource as
	// kube-scheduler writes it.
	claim, err := claims.Create(ctx, &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: devicesNS},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: driver, Count: 2},
		}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "gpus", Driver: driver, Pool: node, Device: "gpu-0"},
		{Request: "gpus", Driver: driver, Pool: node, Device: "gpu-1"},
	}}}
	if _, err := claims.UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	gpus(2)
	inv := waitForReport(t, spoke, hub, cluster)

	// Only an ignored attribute of the slice changes: the agent recomputes the devices, and
	// the report, after the hub's round trip, is the same and not written again.
	cur, err := spoke.ResourceV1().ResourceSlices().Get(ctx, slice.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cur.Spec.Devices {
		cur.Spec.Devices[i].Attributes["index"] = resourcev1.DeviceAttribute{IntValue: ptr.To(int64(10 + i))}
	}
	seen := reports.Load()
	if _, err := spoke.ResourceV1().ResourceSlices().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(context.Context) error {
		if reports.Load() <= seen {
			return errors.New("no report after the slice's update yet")
		}
		return nil
	})
	after, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != inv.ResourceVersion || after.Status.Revision != inv.Status.Revision {
		t.Errorf("the inventory was written again (revision %d to %d) though only an ignored attribute changed", inv.Status.Revision, after.Status.Revision)
	}
}

// setExpectedDevices gives c the devices of the spoke as the agent reads them, for
// expectedReport: {served: false} when it does not serve resource.k8s.io/v1.
func setExpectedDevices(ctx context.Context, spoke kubernetes.Interface, c *inventory.Cluster) error {
	served, err := reporter.DeviceAPIServed(spoke.Discovery())
	if err != nil {
		return err
	}
	if !served {
		c.SetDevices(nil, &v1alpha1.ReportedDevices{})
		return nil
	}
	slices, err := spoke.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	classes, err := spoke.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	claims, err := spoke.ResourceV1().ResourceClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var in inventory.DeviceInput
	for i := range slices.Items {
		in.Slices = append(in.Slices, &slices.Items[i])
	}
	for i := range classes.Items {
		in.Classes = append(in.Classes, &classes.Items[i])
	}
	for i := range claims.Items {
		in.Claims = append(in.Claims, &claims.Items[i])
	}
	sum := inventory.SummarizeDevices(in)
	c.SetDevices(sum.Nodes, &sum.Report)
	return nil
}
