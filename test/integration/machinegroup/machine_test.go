package machinegroup

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/machine"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

const (
	machineGroupName      = "general-machine"
	machineReservationNS  = "fleetfit-agent"
	machineGuestNamespace = "guests"
	machineXLarge         = "compute-xlarge"
	machineMedium         = "compute-medium"
	machineGPUProduct     = "NVIDIA-GeForce-RTX-3090"
)

// machineSpoke is a managed cluster with the spoke CRDs, a pod runtime and
// the machine controller running in-process.
type machineSpoke struct {
	cp       *framework.ControlPlane
	runtime  *framework.PodRuntime
	kube     kubernetes.Interface
	fleetfit fleetfitclient.Interface
}

// startMachineSpoke starts a control plane with the spoke CRDs and a pod
// runtime, creates the reservation and guest namespaces, and runs the machine
// controller until the test ends; on failure it logs the processes' tails.
func startMachineSpoke(t *testing.T) *machineSpoke {
	t.Helper()
	ctx := t.Context()
	cp, err := framework.StartControlPlane(ctx, "machines", framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	crds, err := manifests.SpokeCRDs()
	if err != nil {
		t.Fatal(err)
	}
	if err := install.ApplyCRDs(ctx, cp.AdminConfig(), crds); err != nil {
		t.Fatal(err)
	}
	rt, err := framework.StartPodRuntime(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	s := &machineSpoke{cp: cp, runtime: rt, kube: cp.AdminClient(), fleetfit: fleetfitclient.NewForConfigOrDie(cp.AdminConfig())}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs:\n%s", rt.LogTails(40))
			s.logMachinePods(t)
		}
	})
	// Guests count in namespaces opted in to machine groups only.
	optIn := map[string]string{machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled}
	for ns, labels := range map[string]map[string]string{machineReservationNS: nil, machineGuestNamespace: optIn} {
		if _, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	runCtx, cancel := context.WithCancel(klog.NewContext(context.Background(), ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(2)))))
	done := make(chan error, 1)
	c := machine.New(s.kube, s.fleetfit, machine.Options{Namespace: machineReservationNS})
	go func() { done <- c.Run(runCtx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("machine controller: %v", err)
		}
	})
	return s
}

func (s *machineSpoke) logMachinePods(t *testing.T) {
	pods, err := s.kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: machinegroup.LabelPodRole})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		t.Logf("pod %s/%s on %q: %s deleting=%v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.DeletionTimestamp != nil)
	}
}

// machineNode is a kwok node of the pool labelled (and, with taint, tainted)
// as the node pool controller labels a ready pool node of machineType.
func machineNode(name, machineType, cpu, memory, gpus, product string, taint bool) *corev1.Node {
	w := ut.MakeNode(name).Resource(corev1.ResourceCPU, cpu).Resource(corev1.ResourceMemory, memory)
	if gpus != "" {
		w = w.Resource(machinegroup.DefaultGPUType, gpus)
	}
	if product != "" {
		w = w.Label(machinegroup.GPUProductLabel, product)
	}
	if machineType != "" {
		w = w.Label(machinegroup.MachineTypeKey(machineType), machineGroupName).Label(machinegroup.LabelNodePool, machinegroup.NodePoolReady)
		if taint {
			for _, tt := range machinegroup.NodeTaints(machineGroupName, machineType, v1alpha1.NodeHealthReady) {
				w = w.Taint(tt.Key, tt.Value, tt.Effect)
			}
		}
	}
	return w.Obj()
}

func machineType(name, cpu, memory string, gpus int32, product string, available int32) v1alpha1.MachineType {
	t := v1alpha1.MachineType{
		Name:      name,
		Spec:      v1alpha1.MachineTypeSpec{CPU: resource.MustParse(cpu), Memory: resource.MustParse(memory)},
		Available: available,
	}
	if gpus > 0 {
		t.Spec.GPU = &v1alpha1.MachineGPU{Type: machinegroup.DefaultGPUType, Num: gpus, Product: product}
	}
	return t
}

func machinePoolEntry(node, machineType string, taint bool) v1alpha1.NodePoolEntry {
	return v1alpha1.NodePoolEntry{Name: node, Mode: v1alpha1.NodePoolModeReady, Taint: taint, MachineType: []v1alpha1.MachineTypeRef{{Name: machineType}}}
}

// setMachinePoolReady creates or updates the group's MachineNodePool with a
// Ready condition, as the node pool controller would.
func (s *machineSpoke) setMachinePoolReady(t *testing.T, status metav1.ConditionStatus, message string) {
	t.Helper()
	ctx := t.Context()
	pools := s.fleetfit.FleetfitV1alpha1().MachineNodePools()
	name := machinegroup.NodePoolName(machineGroupName)
	pool, err := pools.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		pool, err = pools.Create(ctx, ut.MakeMachineNodePool(name, machineGroupName).
			Label(machinegroup.LabelMachineGroup, machineGroupName).Obj(), metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	reason := "Ready"
	if status != metav1.ConditionTrue {
		reason = "NodesMissing"
	}
	meta.SetStatusCondition(&pool.Status.Conditions, metav1.Condition{Type: machinegroup.ConditionReady, Status: status, Reason: reason, Message: message})
	if _, err := pools.UpdateStatus(ctx, pool, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// machineGuest is a guest pod of machineType as the pod resource injector
// leaves it: the type's resources as requests and limits, its node affinity
// and tolerations.
func machineGuest(name string, t *v1alpha1.MachineType) *corev1.Pod {
	res := machinegroup.Resources(t)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: machineGuestNamespace, Labels: machinegroup.GuestLabels(machineGroupName, t.Name, "")},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: res, Limits: res.DeepCopy()},
			}},
			Tolerations: machinegroup.Tolerations(machineGroupName, t),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: machinegroup.NodeRequirements(machineGroupName, t)}},
			}}},
		},
	}
}

// machineReservations returns the running reservation pods of machineType by node.
func (s *machineSpoke) machineReservations(ctx context.Context, machineType string) (map[string]string, error) {
	pods, err := s.kube.CoreV1().Pods(machineReservationNS).List(ctx, metav1.ListOptions{
		LabelSelector: metav1.FormatLabelSelector(&metav1.LabelSelector{MatchLabels: machinegroup.ReservationLabels(machineGroupName, machineType)}),
	})
	if err != nil {
		return nil, err
	}
	byNode := map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			byNode[p.Spec.NodeName] = p.Name
		}
	}
	return byNode, nil
}

// machineUsage checks the group's usage of each type, in spec order.
func (s *machineSpoke) machineUsage(ctx context.Context, want ...v1alpha1.AvailableMachine) error {
	g, err := s.fleetfit.FleetfitV1alpha1().MachineGroups().Get(ctx, machineGroupName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if g.Status.ObservedGeneration != g.Generation {
		return fmt.Errorf("status is of generation %d, want %d", g.Status.ObservedGeneration, g.Generation)
	}
	if !slices.Equal(g.Status.AvailableMachines, want) {
		return fmt.Errorf("availableMachines %+v, want %+v", g.Status.AvailableMachines, want)
	}
	return nil
}

// machineReady checks the group's Ready condition: its status and that its message contains msg.
func (s *machineSpoke) machineReady(ctx context.Context, status metav1.ConditionStatus, msg string) error {
	g, err := s.fleetfit.FleetfitV1alpha1().MachineGroups().Get(ctx, machineGroupName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	c := meta.FindStatusCondition(g.Status.Conditions, machinegroup.ConditionReady)
	if c == nil || c.Status != status || !strings.Contains(c.Message, msg) || c.ObservedGeneration != g.Generation {
		return fmt.Errorf("Ready condition %+v, want %s with a message containing %q for generation %d", c, status, msg, g.Generation)
	}
	return nil
}

// machineReplicas checks a reservation StatefulSet's replicas.
func (s *machineSpoke) machineReplicas(ctx context.Context, machineType string, want int32) error {
	set, err := s.kube.AppsV1().StatefulSets(machineReservationNS).Get(ctx, machinegroup.ReservationName(machineGroupName, machineType), metav1.GetOptions{})
	if err != nil {
		return err
	}
	if got := ptr.Deref(set.Spec.Replicas, 1); got != want {
		return fmt.Errorf("StatefulSet %s has %d replicas, want %d", set.Name, got, want)
	}
	return nil
}

func machineUsed(name string, maximum, reserved, used, waiting int32) v1alpha1.AvailableMachine {
	return v1alpha1.AvailableMachine{Name: name, Usage: v1alpha1.MachineUsage{Maximum: maximum, Reserved: reserved, Used: used, Waiting: waiting}}
}

// TestMachineReservations follows one group of the shape of Imperator's example through its
// life on a cluster that runs pods: reservations land on the pool nodes of
// their type, a guest takes over a reservation, a pool that is not Ready and
// a machine type larger than its nodes make the group not Ready, and a
// removed type takes its StatefulSet and Service with it.
func TestMachineReservations(t *testing.T) {
	s := startMachineSpoke(t)
	ctx := t.Context()

	// xl-0 holds one compute-xlarge and is tainted for it; md-0 and md-1 hold
	// one compute-medium each; big-0 is outside the pool and larger than all.
	nodes := []*corev1.Node{
		machineNode("xl-0", machineXLarge, "48", "256Gi", "2", machineGPUProduct, true),
		machineNode("md-0", machineMedium, "8", "64Gi", "1", "", false),
		machineNode("md-1", machineMedium, "8", "64Gi", "1", "", false),
		machineNode("big-0", "", "96", "512Gi", "8", machineGPUProduct, false),
	}
	for _, n := range nodes {
		if _, err := framework.CreateKwokNode(ctx, s.kube, n); err != nil {
			t.Fatal(err)
		}
	}
	framework.Eventually(t, func(ctx context.Context) error {
		for _, want := range nodes {
			n, err := s.kube.CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if err := framework.NodeSchedulable(n); err != nil {
				return err
			}
		}
		return nil
	})

	xlarge := machineType(machineXLarge, "40", "128Gi", 2, machineGPUProduct, 1)
	medium := machineType(machineMedium, "6", "48Gi", 1, "", 2)
	group := ut.MakeMachineGroup(machineGroupName).
		Node("xl-0", machineXLarge, v1alpha1.NodePoolModeReady, true).
		Node("md-0", machineMedium, v1alpha1.NodePoolModeReady, false).
		Node("md-1", machineMedium, v1alpha1.NodePoolModeReady, false).
		MachineType(xlarge, medium).
		Obj()
	groups := s.fleetfit.FleetfitV1alpha1().MachineGroups()
	if _, err := groups.Create(ctx, group, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Without its node pool, the group is not Ready, but reserves already.
	framework.Eventually(t, func(ctx context.Context) error {
		return s.machineReady(ctx, metav1.ConditionFalse, "MachineNodePool general-machine-node-pool does not exist yet")
	})
	s.setMachinePoolReady(t, metav1.ConditionTrue, "")
	framework.Eventually(t, func(ctx context.Context) error {
		return s.machineReady(ctx, metav1.ConditionTrue, "")
	})

	// The reservations land on the pool nodes of their type, never on big-0.
	framework.Eventually(t, func(ctx context.Context) error {
		xl, err := s.machineReservations(ctx, machineXLarge)
		if err != nil {
			return err
		}
		md, err := s.machineReservations(ctx, machineMedium)
		if err != nil {
			return err
		}
		if len(xl) != 1 || xl["xl-0"] == "" {
			return fmt.Errorf("compute-xlarge reservations by node: %v, want one on xl-0", xl)
		}
		if len(md) != 2 || md["md-0"] == "" || md["md-1"] == "" {
			return fmt.Errorf("compute-medium reservations by node: %v, want one on md-0 and md-1", md)
		}
		return s.machineUsage(ctx, machineUsed(machineXLarge, 1, 1, 0, 0), machineUsed(machineMedium, 2, 2, 0, 0))
	})
	svc, err := s.kube.CoreV1().Services(machineReservationNS).Get(ctx, machinegroup.ReservationName(machineGroupName, machineMedium), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !metav1.IsControlledBy(svc, mustGetMachineGroup(t, s)) {
		t.Errorf("Service %s: clusterIP %q, owners %v; want headless and controlled by the group", svc.Name, svc.Spec.ClusterIP, svc.OwnerReferences)
	}

	// A guest of compute-medium takes over a reservation: the StatefulSet
	// shrinks, the guest runs on a compute-medium node, the usage moves.
	if _, err := s.kube.CoreV1().Pods(machineGuestNamespace).Create(ctx, machineGuest("guest-0", &medium), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if err := s.machineReplicas(ctx, machineMedium, 1); err != nil {
			return err
		}
		p, err := s.kube.CoreV1().Pods(machineGuestNamespace).Get(ctx, "guest-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.Phase != corev1.PodRunning || (p.Spec.NodeName != "md-0" && p.Spec.NodeName != "md-1") {
			return fmt.Errorf("guest-0 is %s on %q, want Running on md-0 or md-1", p.Status.Phase, p.Spec.NodeName)
		}
		md, err := s.machineReservations(ctx, machineMedium)
		if err != nil {
			return err
		}
		if len(md) != 1 || md[p.Spec.NodeName] != "" {
			return fmt.Errorf("compute-medium reservations by node: %v, want one, not on the guest's node %s", md, p.Spec.NodeName)
		}
		return s.machineUsage(ctx, machineUsed(machineXLarge, 1, 1, 0, 0), machineUsed(machineMedium, 2, 1, 1, 0))
	})

	// A pool that is not Ready makes the group not Ready, with its message.
	s.setMachinePoolReady(t, metav1.ConditionFalse, "node md-9 does not exist")
	framework.Eventually(t, func(ctx context.Context) error {
		return s.machineReady(ctx, metav1.ConditionFalse, "MachineNodePool general-machine-node-pool is not Ready: node md-9 does not exist")
	})
	s.setMachinePoolReady(t, metav1.ConditionTrue, "")

	// compute-xlarge leaves the group; its node now offers a type larger
	// than it: the StatefulSet and Service of compute-xlarge go, and the
	// condition names the short resource.
	huge := machineType("compute-huge", "100", "128Gi", 0, "", 1)
	// The controller writes the status meanwhile: retry on conflicts.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g := mustGetMachineGroup(t, s)
		g.Spec.MachineTypes = []v1alpha1.MachineType{medium, huge}
		g.Spec.NodePools[0] = machinePoolEntry("xl-0", huge.Name, true)
		_, err := groups.Update(ctx, g, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	xlName := machinegroup.ReservationName(machineGroupName, machineXLarge)
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := s.kube.AppsV1().StatefulSets(machineReservationNS).Get(ctx, xlName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("StatefulSet %s still there (%v)", xlName, err)
		}
		if _, err := s.kube.CoreV1().Services(machineReservationNS).Get(ctx, xlName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Service %s still there (%v)", xlName, err)
		}
		if err := s.machineReady(ctx, metav1.ConditionFalse, "machine type compute-huge needs 100 cpu but the largest pool node of that type has 48 allocatable"); err != nil {
			return err
		}
		return s.machineUsage(ctx, machineUsed(machineMedium, 2, 1, 1, 0), machineUsed("compute-huge", 1, 0, 0, 0))
	})
	// Nothing holds compute-huge's reservation: it waits for a node.
	if err := s.machineReplicas(ctx, "compute-huge", 1); err != nil {
		t.Error(err)
	}

	// Deleting the group takes its StatefulSets, Services and reservation
	// pods with it (the garbage collector follows the owner references);
	// the guest stays.
	if err := groups.Delete(ctx, machineGroupName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	owned := metav1.ListOptions{LabelSelector: machinegroup.LabelMachineGroup + "=" + machineGroupName}
	framework.Eventually(t, func(ctx context.Context) error {
		sets, err := s.kube.AppsV1().StatefulSets(machineReservationNS).List(ctx, owned)
		if err != nil {
			return err
		}
		services, err := s.kube.CoreV1().Services(machineReservationNS).List(ctx, owned)
		if err != nil {
			return err
		}
		pods, err := s.kube.CoreV1().Pods(machineReservationNS).List(ctx, owned)
		if err != nil {
			return err
		}
		if n := len(sets.Items) + len(services.Items) + len(pods.Items); n != 0 {
			return fmt.Errorf("after the group's deletion: %d StatefulSets, %d Services, %d reservation pods left", len(sets.Items), len(services.Items), len(pods.Items))
		}
		return nil
	})
	if _, err := s.kube.CoreV1().Pods(machineGuestNamespace).Get(ctx, "guest-0", metav1.GetOptions{}); err != nil {
		t.Errorf("the guest after the group's deletion: %v", err)
	}
}

func mustGetMachineGroup(t *testing.T, s *machineSpoke) *v1alpha1.MachineGroup {
	t.Helper()
	g, err := s.fleetfit.FleetfitV1alpha1().MachineGroups().Get(t.Context(), machineGroupName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
