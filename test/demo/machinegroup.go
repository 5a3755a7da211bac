package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// The demo's machine group, on cluster1: compute-xlarge (40 cores, 128Gi, 2 × RTX 3090) on
// one node and two compute-medium (6 cores, 24Gi) on another, both nodes tainted for the
// group, and a guest Deployment that only says it wants a compute-medium.
const (
	MachineGroupName      = "general-machine"
	MachineGroupCluster   = 0 // cluster1
	MachineGuestNamespace = "ml"
	machineXLarge         = "compute-xlarge"
	machineMedium         = "compute-medium"
	machineGPUProduct     = "NVIDIA-GeForce-RTX-3090"
)

// machineNodes join cluster1 after the examples are placed, so that the examples' decisions
// do not depend on them.
func machineNodes() []*corev1.Node {
	return []*corev1.Node{
		ut.MakeNode("xl-0").Resource("cpu", "48").Resource("memory", "192Gi").Resource(ResourceGPU, "2").
			Label(LabelGPUProduct, machineGPUProduct).Obj(),
		ut.MakeNode("md-0").Resource("cpu", "16").Resource("memory", "64Gi").Obj(),
	}
}

// MachineGroup is the demo's group.
func MachineGroup() *v1alpha1.MachineGroup {
	entry := func(node, machineType string) v1alpha1.NodePoolEntry {
		return v1alpha1.NodePoolEntry{Name: node, Mode: v1alpha1.NodePoolModeReady, Taint: true, MachineType: []v1alpha1.MachineTypeRef{{Name: machineType}}}
	}
	return &v1alpha1.MachineGroup{
		ObjectMeta: metav1.ObjectMeta{Name: MachineGroupName},
		Spec: v1alpha1.MachineGroupSpec{
			NodePools: []v1alpha1.NodePoolEntry{entry("xl-0", machineXLarge), entry("md-0", machineMedium)},
			MachineTypes: []v1alpha1.MachineType{
				{Name: machineXLarge, Available: 1, Spec: v1alpha1.MachineTypeSpec{
					CPU: resource.MustParse("40"), Memory: resource.MustParse("128Gi"),
					GPU: &v1alpha1.MachineGPU{Type: string(ResourceGPU), Num: 2, Product: machineGPUProduct},
				}},
				{Name: machineMedium, Available: 2, Spec: v1alpha1.MachineTypeSpec{
					CPU: resource.MustParse("6"), Memory: resource.MustParse("24Gi"),
				}},
			},
		},
	}
}

// MachineGuest is the guest Deployment: one pod that wants a compute-medium.
func MachineGuest() *appsv1.Deployment {
	l := machinegroup.GuestLabels(MachineGroupName, machineMedium, "")
	l["app"] = "notebook"
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "notebook", Namespace: MachineGuestNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "notebook"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "notebook", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// showMachineGroup adds the machine nodes to cluster1, creates the group, waits until it
// reserves its machines, runs the guest, waits until it took a reservation over, and prints
// the group's usage and where the guest runs with what.
func showMachineGroup(ctx context.Context, con *console, spoke *framework.ControlPlane, timeout time.Duration) error {
	kube := spoke.AdminClient()
	groups := fleetfitclient.NewForConfigOrDie(spoke.AdminConfig()).FleetfitV1alpha1().MachineGroups()
	for _, n := range machineNodes() {
		if _, err := framework.CreateKwokNode(ctx, kube, n); err != nil {
			return err
		}
	}
	if _, err := groups.Create(ctx, MachineGroup(), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating MachineGroup %s: %w", MachineGroupName, err)
	}
	reserved := func(g *v1alpha1.MachineGroup) error {
		return machineUsage(g, map[string][4]int32{machineXLarge: {1, 1, 0, 0}, machineMedium: {2, 2, 0, 0}})
	}
	if err := waitGroup(ctx, groups, timeout, reserved); err != nil {
		return err
	}
	con.step("%s: MachineGroup %s reserves 1 compute-xlarge on xl-0 and 2 compute-medium on md-0 with reservation pods", spoke.Name, MachineGroupName)

	optIn := map[string]string{machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: MachineGuestNamespace, Labels: optIn}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	// The namespace's default ServiceAccount, which admission requires, comes a moment later.
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := kube.AppsV1().Deployments(MachineGuestNamespace).Create(ctx, MachineGuest(), metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	if err != nil {
		return fmt.Errorf("creating the guest Deployment: %w", err)
	}
	taken := func(g *v1alpha1.MachineGroup) error {
		return machineUsage(g, map[string][4]int32{machineXLarge: {1, 1, 0, 0}, machineMedium: {2, 1, 1, 0}})
	}
	if err := waitGroup(ctx, groups, timeout, taken); err != nil {
		return err
	}
	pods, err := kube.CoreV1().Pods(MachineGuestNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app=notebook"})
	if err != nil {
		return err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || len(p.Spec.Containers) == 0 {
			continue
		}
		r := p.Spec.Containers[0].Resources
		con.step("%s: guest pod %s/%s took a compute-medium over: it runs on %s with requests %s = limits %s, injected by fleetfit-agent",
			spoke.Name, p.Namespace, p.Name, p.Spec.NodeName, amounts(r.Requests), amounts(r.Limits))
	}
	g, err := groups.Get(ctx, MachineGroupName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(con, "\n%s: MachineGroup %s\n%-16s %8s %9s %5s %8s\n", spoke.Name, MachineGroupName, "MACHINE TYPE", "MAXIMUM", "RESERVED", "USED", "WAITING")
	for _, m := range g.Status.AvailableMachines {
		fmt.Fprintf(con, "%-16s %8d %9d %5d %8d\n", m.Name, m.Usage.Maximum, m.Usage.Reserved, m.Usage.Used, m.Usage.Waiting)
	}
	fmt.Fprintln(con)
	return nil
}

func waitGroup(ctx context.Context, groups interface {
	Get(context.Context, string, metav1.GetOptions) (*v1alpha1.MachineGroup, error)
}, timeout time.Duration, check func(*v1alpha1.MachineGroup) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		g, err := groups.Get(ctx, MachineGroupName, metav1.GetOptions{})
		if err == nil {
			err = check(g)
		}
		last = err
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for MachineGroup %s: %w (last: %v)", MachineGroupName, err, last)
	}
	return nil
}

// machineUsage checks a group's usage: maximum, reserved, used and waiting per type.
func machineUsage(g *v1alpha1.MachineGroup, want map[string][4]int32) error {
	if len(g.Status.AvailableMachines) != len(want) {
		return fmt.Errorf("usage of %d machine types, want %d", len(g.Status.AvailableMachines), len(want))
	}
	for _, m := range g.Status.AvailableMachines {
		u := m.Usage
		if got := [4]int32{u.Maximum, u.Reserved, u.Used, u.Waiting}; got != want[m.Name] {
			return fmt.Errorf("%s: maximum, reserved, used, waiting = %v, want %v", m.Name, got, want[m.Name])
		}
	}
	return nil
}

func amounts(l corev1.ResourceList) string {
	var parts []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, ResourceGPU} {
		if q, ok := l[name]; ok {
			parts = append(parts, string(name)+" "+q.String())
		}
	}
	return strings.Join(parts, ", ")
}
