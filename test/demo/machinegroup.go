package demo

import (
	"context"
	"fmt"
	"maps"
	"slices"
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

// The demo's machine groups, both named general-machine. On cluster1: one compute-xlarge
// (40 cores, 128Gi, 2 × RTX 3090) on one node and two compute-medium (6 cores, 24Gi) on
// another, and a guest Deployment there that only says it wants a compute-medium. On
// cluster2: two compute-xlarge on two nodes. Every pool node is tainted for the group. Then
// the hub places the example "render", two replicas that take a compute-xlarge each: only
// cluster2 has two free.
const (
	MachineGroupName      = "general-machine"
	MachineGuestNamespace = "ml"
	machineXLarge         = "compute-xlarge"
	machineMedium         = "compute-medium"
	machineGPUProduct     = "NVIDIA-GeForce-RTX-3090"
)

// machineCluster is one cluster's share of the demo's machine groups: its pool nodes (they
// join after the examples are placed, so that the examples' decisions do not depend on them)
// and its group.
type machineCluster struct {
	spoke int
	nodes []*corev1.Node
	group *v1alpha1.MachineGroup
	// reserved is the usage once the reservations run: maximum, reserved, used, waiting.
	reserved map[string][4]int32
}

func machineClusters() []machineCluster {
	xlNode := func(name string) *corev1.Node {
		return ut.MakeNode(name).Resource("cpu", "48").Resource("memory", "192Gi").Resource(ResourceGPU, "2").
			Label(LabelGPUProduct, machineGPUProduct).Obj()
	}
	return []machineCluster{
		{
			spoke:    0,
			nodes:    []*corev1.Node{xlNode("xl-0"), ut.MakeNode("md-0").Resource("cpu", "16").Resource("memory", "64Gi").Obj()},
			group:    machineGroup(map[string]string{"xl-0": machineXLarge, "md-0": machineMedium}, map[string]int32{machineXLarge: 1, machineMedium: 2}),
			reserved: map[string][4]int32{machineXLarge: {1, 1, 0, 0}, machineMedium: {2, 2, 0, 0}},
		},
		{
			spoke:    1,
			nodes:    []*corev1.Node{xlNode("xl-1"), xlNode("xl-2")},
			group:    machineGroup(map[string]string{"xl-1": machineXLarge, "xl-2": machineXLarge}, map[string]int32{machineXLarge: 2}),
			reserved: map[string][4]int32{machineXLarge: {2, 2, 0, 0}},
		},
	}
}

// machineGroup is a group general-machine with the pool nodes (node → machine type, tainted)
// and the available machines of each type.
func machineGroup(pool map[string]string, available map[string]int32) *v1alpha1.MachineGroup {
	specs := map[string]v1alpha1.MachineTypeSpec{
		machineXLarge: {CPU: resource.MustParse("40"), Memory: resource.MustParse("128Gi"),
			GPU: &v1alpha1.MachineGPU{Type: string(ResourceGPU), Num: 2, Product: machineGPUProduct}},
		machineMedium: {CPU: resource.MustParse("6"), Memory: resource.MustParse("24Gi")},
	}
	g := &v1alpha1.MachineGroup{ObjectMeta: metav1.ObjectMeta{Name: MachineGroupName}}
	for _, node := range slices.Sorted(maps.Keys(pool)) {
		g.Spec.NodePools = append(g.Spec.NodePools, v1alpha1.NodePoolEntry{
			Name: node, Mode: v1alpha1.NodePoolModeReady, Taint: true, MachineType: []v1alpha1.MachineTypeRef{{Name: pool[node]}},
		})
	}
	for _, t := range slices.Sorted(maps.Keys(available)) {
		g.Spec.MachineTypes = append(g.Spec.MachineTypes, v1alpha1.MachineType{Name: t, Spec: specs[t], Available: available[t]})
	}
	return g
}

// MachineExample is "render": two replicas that take a compute-xlarge of general-machine
// each, and ask for nothing else (deploy/examples/machinetype.yaml).
func MachineExample() Example {
	in := ut.MakeHPAIntent("render", Namespace).Placement("render").Consumer(
		ut.MakeConsumer("render").Target("Deployment", "render", "render").Requirement(v1alpha1.ResourceRequirement{
			Name: "xlarge", MachineType: &v1alpha1.MachineTypeRequirement{Group: MachineGroupName, Name: machineXLarge},
		}).Obj(),
	).Manifest(deployment("render", "render", 2)).Obj()
	return Example{Placement: placement("render"), Intent: in, Replicas: 2}
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

// showMachineGroups gives cluster1 and cluster2 their pool nodes and groups, waits until the
// groups reserve their machines, runs cluster1's guest and waits until it took a reservation
// over, then has the hub place "render" and waits until its guests run; it prints each step.
func showMachineGroups(ctx context.Context, con *console, f *framework.Fleet, examples []Example, timeout time.Duration) error {
	for _, mc := range machineClusters() {
		spoke := f.Spokes[mc.spoke]
		for _, n := range mc.nodes {
			if _, err := framework.CreateKwokNode(ctx, spoke.AdminClient(), n); err != nil {
				return err
			}
		}
		groups := fleetfitclient.NewForConfigOrDie(spoke.AdminConfig()).FleetfitV1alpha1().MachineGroups()
		if _, err := groups.Create(ctx, mc.group, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("%s: creating MachineGroup %s: %w", spoke.Name, MachineGroupName, err)
		}
		if err := waitGroup(ctx, groups, timeout, func(g *v1alpha1.MachineGroup) error { return machineUsage(g, mc.reserved) }); err != nil {
			return fmt.Errorf("%s: %w", spoke.Name, err)
		}
		var held []string
		for _, t := range mc.group.Spec.MachineTypes {
			held = append(held, fmt.Sprintf("%d %s", t.Available, t.Name))
		}
		con.step("%s: MachineGroup %s reserves %s with reservation pods on its tainted pool nodes", spoke.Name, MachineGroupName, strings.Join(held, " and "))
	}
	if err := runGuest(ctx, con, f.Spokes[0], timeout); err != nil {
		return err
	}

	render := MachineExample()
	if err := applyExamples(ctx, f, []Example{render}); err != nil {
		return err
	}
	decided, err := waitDecided(ctx, f, []Example{render}, timeout)
	if err != nil {
		return err
	}
	con.step("fleetfit-hub decided %s: 2 × compute-xlarge, free on cluster2 only (cluster1 has 1)", decided)
	if err := waitPodsRunning(ctx, f, append(slices.Clone(examples), render), timeout); err != nil {
		return fmt.Errorf("waiting for render's guests: %w", err)
	}
	// What the CLI shows next comes from the hub: wait until cluster2's agent has reported the
	// guests using both machines.
	invs := fleetfitclient.NewForConfigOrDie(f.Hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(framework.SpokeName(1))
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		inv, err := invs.Get(ctx, framework.SpokeName(1), metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		for _, g := range inv.Status.MachineGroups {
			for _, m := range g.MachineTypes {
				if g.Name == MachineGroupName && m.Name == machineXLarge {
					last = fmt.Errorf("the hub sees %d of compute-xlarge used and %d reserved", m.Usage.Used, m.Usage.Reserved)
					return m.Usage.Used == 2 && m.Usage.Reserved == 0, nil
				}
			}
		}
		last = fmt.Errorf("the hub sees no compute-xlarge on %s", framework.SpokeName(1))
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for cluster2's report of render's guests: %w (last: %v)", err, last)
	}
	con.step("render's pods run as guests of general-machine, injected with the machine type's resources by fleetfit-agent")
	return nil
}

// runGuest runs the guest Deployment on spoke and waits until it took a compute-medium over.
func runGuest(ctx context.Context, con *console, spoke *framework.ControlPlane, timeout time.Duration) error {
	kube := spoke.AdminClient()
	groups := fleetfitclient.NewForConfigOrDie(spoke.AdminConfig()).FleetfitV1alpha1().MachineGroups()
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
