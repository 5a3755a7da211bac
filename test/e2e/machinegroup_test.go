package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/typed/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// Imperator's example machine group on a managed cluster of its own, cluster3.
const (
	mgCluster  = "cluster3"
	mgGroup    = "general-machine"
	mgXLarge   = "compute-xlarge"
	mgMedium   = "compute-medium"
	mgGuestNS  = "ml"
	mgReserved = "fleetfit-agent"
	rtx3090    = "NVIDIA-GeForce-RTX-3090"
	dgx1       = "DGX-1"
)

// mgNodes are the pool's three nodes as Imperator's example names them, and a large node outside it:
// michiru takes one compute-xlarge (2 × RTX 3090), utaha and eriri one compute-medium each
// (a DGX-1 GPU).
func mgNodes() []*corev1.Node {
	return []*corev1.Node{
		ut.MakeNode("michiru").Resource("cpu", "48").Resource("memory", "192Gi").Resource(gpu, "2").
			Label(gpuProduct, rtx3090).Obj(),
		ut.MakeNode("utaha").Resource("cpu", "8").Resource("memory", "64Gi").Resource(gpu, "1").
			Label(machinegroup.GPUMachineLabel, dgx1).Obj(),
		ut.MakeNode("eriri").Resource("cpu", "8").Resource("memory", "64Gi").Resource(gpu, "1").
			Label(machinegroup.GPUMachineLabel, dgx1).Obj(),
		ut.MakeNode("plain-0").Resource("cpu", "64").Resource("memory", "256Gi").Obj(),
	}
}

// mgGroupObject is Imperator's example Machine, less its third type.
func mgGroupObject() *v1alpha1.MachineGroup {
	return ut.MakeMachineGroup(mgGroup).
		Node("michiru", mgXLarge, v1alpha1.NodePoolModeReady, true).
		Node("utaha", mgMedium, v1alpha1.NodePoolModeMaintenance, false).
		Node("eriri", mgMedium, v1alpha1.NodePoolModeReady, true).
		MachineType(
			ut.MakeGroupMachineType(mgMedium, "6", "48Gi").Available(2).
				GPU(v1alpha1.MachineGPU{Type: string(gpu), Num: 1, Machine: dgx1}).Obj(),
			ut.MakeGroupMachineType(mgXLarge, "40000m", "128Gi").Available(1).
				GPU(v1alpha1.MachineGPU{Num: 2, Product: rtx3090}).Obj(),
		).
		Obj()
}

// mgGuest is a Deployment that only says which machine it wants and which of its two
// containers gets it.
func mgGuest() *appsv1.Deployment {
	l := machinegroup.GuestLabels(mgGroup, mgXLarge, "train")
	l["app"] = "trainer"
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer", Namespace: mgGuestNS},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "trainer"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "log-shipper", Image: "registry.k8s.io/pause:3.10"},
					{Name: "train", Image: "registry.k8s.io/pause:3.10"},
				}},
			},
		},
	}
}

// TestMachineGroupOnAManagedCluster runs Imperator's example machine group on a managed
// cluster where everything is a process: bin/fleetfit-agent (node pool and machine
// controllers, the pod resource injector that the cluster's API server calls, the
// reporter), kube-controller-manager, kube-scheduler and kwok. The group reserves the right
// nodes; a guest Deployment is injected and takes over a reservation; the hub sees the
// usage; maintenance and a cordoned node show on the nodes and in the pool; deleting the
// group takes everything it made and put on nodes away.
func TestMachineGroupOnAManagedCluster(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	spoke, logs := startExtraSpoke(t, mgCluster, mgNodes())
	kube := spoke.AdminClient()
	groups := fleetfitclient.NewForConfigOrDie(spoke.AdminConfig()).FleetfitV1alpha1()
	hubFleetfit := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1()

	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		if g, err := groups.MachineGroups().Get(ctx, mgGroup, metav1.GetOptions{}); err == nil {
			t.Logf("group status: %+v", g.Status)
		}
		if p, err := groups.MachineNodePools().Get(ctx, machinegroup.NodePoolName(mgGroup), metav1.GetOptions{}); err == nil {
			t.Logf("node pool status: %+v", p.Status)
		}
		if pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				t.Logf("pod %s/%s on %q: %s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
		for _, c := range logs {
			t.Logf("--- %s ---\n%s", c.Name(), c.LogTail(logLines))
		}
	})

	agent, err := framework.StartAgentProcess(ctx, hub, spoke, mgCluster, agentMinInterval)
	if err != nil {
		t.Fatal(err)
	}
	logs = append(logs, agent)
	optIn := map[string]string{machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mgGuestNS, Labels: optIn}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitSchedulable(t, spoke, mgNodes())
	if _, err := groups.MachineGroups().Create(ctx, mgGroupObject(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The pool's nodes carry what Imperator's design says, and only they do.
	xlargeKey, mediumKey := machinegroup.MachineTypeKey(mgXLarge), machinegroup.MachineTypeKey(mgMedium)
	framework.Eventually(t, func(ctx context.Context) error {
		return errors.Join(
			mgNodeCarries(ctx, kube, "michiru", map[string]string{xlargeKey: mgGroup, machinegroup.LabelNodePool: machinegroup.NodePoolReady},
				[]string{xlargeKey + "=" + mgGroup, machinegroup.LabelNodePool + "=" + machinegroup.NodePoolReady}),
			mgNodeCarries(ctx, kube, "utaha", map[string]string{mediumKey: mgGroup}, nil),
			mgNodeCarries(ctx, kube, "eriri", map[string]string{mediumKey: mgGroup, machinegroup.LabelNodePool: machinegroup.NodePoolReady},
				[]string{mediumKey + "=" + mgGroup, machinegroup.LabelNodePool + "=" + machinegroup.NodePoolReady}),
			mgNodeBare(ctx, kube, "plain-0"),
			mgPoolHealth(ctx, groups, map[string]v1alpha1.NodeHealth{
				"michiru": v1alpha1.NodeHealthReady, "utaha": v1alpha1.NodeHealthMaintenance, "eriri": v1alpha1.NodeHealthReady,
			}),
		)
	})

	// Reservations hold compute-xlarge on michiru and one compute-medium on eriri; the second
	// compute-medium waits, as utaha is in maintenance and the large node is not in the pool.
	framework.Eventually(t, func(ctx context.Context) error {
		return errors.Join(
			mgReservationsOn(ctx, kube, mgXLarge, []string{"michiru"}),
			mgReservationsOn(ctx, kube, mgMedium, []string{"", "eriri"}),
			mgUsage(ctx, groups, mgMachines(mgMedium, 2, 1, 0, 0), mgMachines(mgXLarge, 1, 1, 0, 0)),
		)
	})
	// The hub sees the group, its types and their usage in the cluster's inventory.
	framework.Eventually(t, func(ctx context.Context) error {
		return mgHubUsage(ctx, hubFleetfit, mgCluster, mgMachines(mgMedium, 2, 1, 0, 0), mgMachines(mgXLarge, 1, 1, 0, 0))
	})

	// A guest takes over the compute-xlarge reservation: injected, it waits for michiru,
	// the reservation StatefulSet shrinks, and the guest runs there.
	if _, err := kube.AppsV1().Deployments(mgGuestNS).Create(ctx, mgGuest(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var guest corev1.Pod
	framework.Eventually(t, func(ctx context.Context) error {
		pods, err := kube.CoreV1().Pods(mgGuestNS).List(ctx, metav1.ListOptions{LabelSelector: "app=trainer"})
		if err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d guest pods, want 1", len(pods.Items))
		}
		guest = pods.Items[0]
		if guest.Spec.NodeName != "michiru" || guest.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("guest %s is %s on %q, want Running on michiru", guest.Name, guest.Status.Phase, guest.Spec.NodeName)
		}
		return errors.Join(
			mgReservationsOn(ctx, kube, mgXLarge, nil),
			mgUsage(ctx, groups, mgMachines(mgMedium, 2, 1, 0, 0), mgMachines(mgXLarge, 1, 0, 1, 0)),
		)
	})
	want := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("40"), corev1.ResourceMemory: resource.MustParse("128Gi"), gpu: resource.MustParse("2"),
	}
	for _, c := range guest.Spec.Containers {
		switch c.Name {
		case "train":
			if !mgSameAmounts(c.Resources.Requests, want) || !mgSameAmounts(c.Resources.Limits, want) {
				t.Errorf("container train has requests %v and limits %v, want both %v", c.Resources.Requests, c.Resources.Limits, want)
			}
		default:
			if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
				t.Errorf("container %s got resources %+v; only train should", c.Name, c.Resources)
			}
		}
	}
	framework.Eventually(t, func(ctx context.Context) error {
		return mgHubUsage(ctx, hubFleetfit, mgCluster, mgMachines(mgMedium, 2, 1, 0, 0), mgMachines(mgXLarge, 1, 0, 1, 0))
	})

	// eriri goes into maintenance: its ready label goes, its taint says so, and a reservation
	// that has to start again waits instead of landing anywhere else.
	mgUpdateGroup(t, groups, func(g *v1alpha1.MachineGroup) { g.Spec.NodePools[2].Mode = v1alpha1.NodePoolModeMaintenance })
	framework.Eventually(t, func(ctx context.Context) error {
		return errors.Join(
			mgNodeCarries(ctx, kube, "eriri", map[string]string{mediumKey: mgGroup},
				[]string{mediumKey + "=" + mgGroup, machinegroup.LabelNodePool + "=" + machinegroup.NodePoolMaintenance}),
			mgPoolHealth(ctx, groups, map[string]v1alpha1.NodeHealth{
				"michiru": v1alpha1.NodeHealthReady, "utaha": v1alpha1.NodeHealthMaintenance, "eriri": v1alpha1.NodeHealthMaintenance,
			}),
		)
	})
	if err := kube.CoreV1().Pods(mgReserved).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(machinegroup.ReservationLabels(mgGroup, mgMedium)).String(),
	}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		return errors.Join(
			mgReservationsOn(ctx, kube, mgMedium, []string{"", ""}),
			mgUsage(ctx, groups, mgMachines(mgMedium, 2, 0, 0, 0), mgMachines(mgXLarge, 1, 0, 1, 0)),
		)
	})

	// A cordoned node is NotReady: kube-controller-manager taints it unschedulable, and the
	// ready label goes.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := kube.CoreV1().Nodes().Get(ctx, "michiru", metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Spec.Unschedulable = true
		_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		return errors.Join(
			mgNodeCarries(ctx, kube, "michiru", map[string]string{xlargeKey: mgGroup},
				[]string{xlargeKey + "=" + mgGroup, machinegroup.LabelNodePool + "=" + machinegroup.NodePoolNotReady}),
			mgPoolHealth(ctx, groups, map[string]v1alpha1.NodeHealth{
				"michiru": v1alpha1.NodeHealthNotReady, "utaha": v1alpha1.NodeHealthMaintenance, "eriri": v1alpha1.NodeHealthMaintenance,
			}),
		)
	})

	// Deleting the group takes its StatefulSets, Services and pool away, and everything it
	// put on the nodes; the guest is the user's and stays.
	if err := groups.MachineGroups().Delete(ctx, mgGroup, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		sel := metav1.ListOptions{LabelSelector: machinegroup.LabelMachineGroup + "=" + mgGroup}
		sets, err := kube.AppsV1().StatefulSets(mgReserved).List(ctx, sel)
		if err != nil {
			return err
		}
		svcs, err := kube.CoreV1().Services(mgReserved).List(ctx, sel)
		if err != nil {
			return err
		}
		if len(sets.Items)+len(svcs.Items) > 0 {
			return fmt.Errorf("%d StatefulSets and %d Services of the group remain", len(sets.Items), len(svcs.Items))
		}
		var errs []error
		for _, n := range mgNodes() {
			errs = append(errs, mgNodeBare(ctx, kube, n.Name))
		}
		return errors.Join(errs...)
	})
	if p, err := kube.CoreV1().Pods(mgGuestNS).Get(ctx, guest.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("the guest should outlive the group: %v", err)
	}
}

// mgClient reads MachineGroups and MachineNodePools on the spoke, ClusterInventories on the hub.
type mgClient = fleetfitv1alpha1.FleetfitV1alpha1Interface

// mgNodeCarries checks a node's labels and NoSchedule taints under machinegroup.Prefix
// (taints as key=value) and the group's annotation.
func mgNodeCarries(ctx context.Context, kube kubernetes.Interface, name string, wantLabels map[string]string, wantTaints []string) error {
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	gotLabels, gotTaints := mgOwn(n)
	if wantLabels == nil {
		wantLabels = map[string]string{}
	}
	slices.Sort(wantTaints)
	if diff := cmp.Diff(wantLabels, gotLabels); diff != "" {
		return fmt.Errorf("node %s labels (-want +got):\n%s", name, diff)
	}
	if diff := cmp.Diff(wantTaints, gotTaints); diff != "" {
		return fmt.Errorf("node %s taints (-want +got):\n%s", name, diff)
	}
	if got := n.Annotations[machinegroup.AnnotationMachineGroup]; got != mgGroup {
		return fmt.Errorf("node %s has annotation %s=%q, want %q", name, machinegroup.AnnotationMachineGroup, got, mgGroup)
	}
	return nil
}

// mgNodeBare checks that a node carries nothing of a machine group.
func mgNodeBare(ctx context.Context, kube kubernetes.Interface, name string) error {
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	l, taints := mgOwn(n)
	_, annotated := n.Annotations[machinegroup.AnnotationMachineGroup]
	if len(l) > 0 || len(taints) > 0 || annotated {
		return fmt.Errorf("node %s still carries labels %v, taints %v, annotated %v", name, l, taints, annotated)
	}
	return nil
}

func mgOwn(n *corev1.Node) (map[string]string, []string) {
	l := map[string]string{}
	for k, v := range n.Labels {
		if strings.HasPrefix(k, machinegroup.Prefix) {
			l[k] = v
		}
	}
	var taints []string
	for _, t := range n.Spec.Taints {
		if strings.HasPrefix(t.Key, machinegroup.Prefix) && t.Effect == corev1.TaintEffectNoSchedule {
			taints = append(taints, t.Key+"="+t.Value)
		}
	}
	slices.Sort(taints)
	return l, taints
}

func mgPoolHealth(ctx context.Context, groups mgClient, want map[string]v1alpha1.NodeHealth) error {
	p, err := groups.MachineNodePools().Get(ctx, machinegroup.NodePoolName(mgGroup), metav1.GetOptions{})
	if err != nil {
		return err
	}
	got := map[string]v1alpha1.NodeHealth{}
	for _, n := range p.Status.NodePool {
		got[n.Name] = n.Condition
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return fmt.Errorf("node pool health (-want +got):\n%s", diff)
	}
	return nil
}

// mgReservationsOn checks where a type's reservation pods are ("" for one not scheduled),
// ignoring pods being deleted.
func mgReservationsOn(ctx context.Context, kube kubernetes.Interface, machineType string, want []string) error {
	pods, err := kube.CoreV1().Pods(mgReserved).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(machinegroup.ReservationLabels(mgGroup, machineType)).String(),
	})
	if err != nil {
		return err
	}
	got := []string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			got = append(got, p.Spec.NodeName)
		}
	}
	if want == nil {
		want = []string{}
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		return fmt.Errorf("%s reservations on nodes (-want +got):\n%s", machineType, diff)
	}
	return nil
}

func mgMachines(name string, maximum, reserved, used, waiting int32) v1alpha1.AvailableMachine {
	return v1alpha1.AvailableMachine{Name: name, Usage: v1alpha1.MachineUsage{Maximum: maximum, Reserved: reserved, Used: used, Waiting: waiting}}
}

func mgUsage(ctx context.Context, groups mgClient, want ...v1alpha1.AvailableMachine) error {
	g, err := groups.MachineGroups().Get(ctx, mgGroup, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if diff := cmp.Diff(want, g.Status.AvailableMachines); diff != "" {
		return fmt.Errorf("usage (-want +got):\n%s", diff)
	}
	return nil
}

// mgHubUsage checks the usage of general-machine's types in cluster's inventory on the hub,
// as the cluster's agent reports it.
func mgHubUsage(ctx context.Context, hub mgClient, cluster string, want ...v1alpha1.AvailableMachine) error {
	inv, err := hub.ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var got []v1alpha1.AvailableMachine
	for _, g := range inv.Status.MachineGroups {
		if g.Name != mgGroup {
			continue
		}
		for _, m := range g.MachineTypes {
			got = append(got, v1alpha1.AvailableMachine{Name: m.Name, Usage: m.Usage})
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		return fmt.Errorf("usage in the hub's inventory of %s (-want +got):\n%s", cluster, diff)
	}
	return nil
}

func mgUpdateGroup(t *testing.T, groups mgClient, edit func(*v1alpha1.MachineGroup)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := groups.MachineGroups().Get(t.Context(), mgGroup, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(g)
		_, err = groups.MachineGroups().Update(t.Context(), g, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func mgSameAmounts(got, want corev1.ResourceList) bool {
	if len(got) != len(want) {
		return false
	}
	for name, q := range want {
		g, ok := got[name]
		if !ok || g.Cmp(q) != 0 {
			return false
		}
	}
	return true
}
