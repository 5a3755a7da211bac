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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// A managed cluster of its own, cluster4, offers two compute-xlarge of general-machine; the
// fleet's clusters have no machine group.
const (
	mtCluster = "cluster4"
	// mtNS holds the Placement and the HPAIntent on the hub, and the workload on cluster4.
	mtNS       = "mt-e2e"
	mtWorkload = "xl-trainer"
	mtTrain    = "train"
)

// mtNodes are two nodes that take one compute-xlarge each (2 × RTX 3090), and a large
// node outside the pool, where a guest must never land.
func mtNodes() []*corev1.Node {
	xlarge := func(name string) *corev1.Node {
		return ut.MakeNode(name).Resource("cpu", "48").Resource("memory", "192Gi").Resource(gpu, "2").
			Label(gpuProduct, rtx3090).Obj()
	}
	return []*corev1.Node{
		xlarge("xlarge-0"), xlarge("xlarge-1"),
		ut.MakeNode("plain-0").Resource("cpu", "96").Resource("memory", "512Gi").Obj(),
	}
}

// mtGroupObject offers compute-xlarge on both pool nodes, tainted so that only its pods go there.
func mtGroupObject() *v1alpha1.MachineGroup {
	return ut.MakeMachineGroup(mgGroup).
		Node("xlarge-0", mgXLarge, v1alpha1.NodePoolModeReady, true).
		Node("xlarge-1", mgXLarge, v1alpha1.NodePoolModeReady, true).
		MachineType(ut.MakeGroupMachineType(mgXLarge, "40", "128Gi").Available(2).
			GPU(v1alpha1.MachineGPU{Num: 2, Product: rtx3090}).Obj()).
		Obj()
}

// mtDeployment is the workload as its author wrote it: two replicas, a log shipper beside the
// trainer, and nothing about machines, which the intent adds.
func mtDeployment() *appsv1.Deployment {
	l := map[string]string{"app": mtWorkload}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: mtWorkload},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "log-shipper", Image: "registry.k8s.io/pause:3.10"},
					{Name: mtTrain, Image: "registry.k8s.io/pause:3.10"},
				}},
			},
		},
	}
}

// TestMachineTypeWorkloadRunsAsGuests follows an HPAIntent whose consumer takes
// general-machine/compute-xlarge from the hub to guest pods on a managed cluster where
// everything is a process (kube-controller-manager, kube-scheduler, kwok, OCM's work agent,
// bin/fleetfit-agent; bin/fleetfit-hub on the hub). cluster4 is the only cluster with the
// type. The hub delivers the Deployment labelled as a guest, with no resources, into a
// namespace it opts in to the injector; the agent's injector gives the pods the type's
// resources, they take over both reservations and run on the type's nodes; the group and the
// hub show the machines used and the intent the replicas ready; deleting the intent gives the
// machines back to reservations.
func TestMachineTypeWorkloadRunsAsGuests(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	hubFleetfit := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1()
	intents := hubFleetfit.HPAIntents(mtNS)
	spoke, logs := startExtraSpoke(t, mtCluster, mtNodes())
	kube := spoke.AdminClient()
	groups := fleetfitclient.NewForConfigOrDie(spoke.AdminConfig()).FleetfitV1alpha1()

	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		if in, err := intents.Get(ctx, mtWorkload, metav1.GetOptions{}); err == nil {
			t.Logf("intent status: %+v", in.Status)
		}
		if d, err := clusters.ClusterV1beta1().PlacementDecisions(mtNS).Get(ctx, mtWorkload+"-decision-1", metav1.GetOptions{}); err == nil {
			t.Logf("decisions: %+v", d.Status.Decisions)
		}
		if g, err := groups.MachineGroups().Get(ctx, mgGroup, metav1.GetOptions{}); err == nil {
			t.Logf("group status: %+v", g.Status)
		}
		if pods, err := kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				t.Logf("pod %s/%s on %q: %s %v", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Labels)
			}
		}
		for _, c := range logs {
			t.Logf("--- %s ---\n%s", c.Name(), c.LogTail(logLines))
		}
	})

	// cluster4: its CRDs, nodes, the agent and OCM's work agent, registered on the hub in the
	// default cluster set; the hub forgets it when the test ends.
	// cluster4 registered on the hub in the default cluster set; the hub forgets it when the
	// test ends.
	mc := &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: mtCluster, Labels: map[string]string{
			"name": mtCluster, "cluster.open-cluster-management.io/clusterset": "default",
		}},
		Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
	}
	if _, err := clusters.ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := clusters.ClusterV1().ManagedClusters().Delete(context.Background(), mtCluster, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ManagedCluster %s: %v", mtCluster, err)
		}
	})
	// The grant labels the namespace for the injector; take the label away, as from a
	// namespace made before, to see the hub's delivery put it back.
	if err := framework.GrantDelivery(ctx, spoke, mtNS); err != nil {
		t.Fatal(err)
	}
	if err := mtNamespaceOptedIn(ctx, spoke, true); err != nil {
		t.Fatal(err)
	}
	optOut := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, machinegroup.LabelInjectResource)
	if _, err := kube.CoreV1().Namespaces().Patch(ctx, mtNS, types.MergePatchType, []byte(optOut), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := mtNamespaceOptedIn(ctx, spoke, false); err != nil {
		t.Fatal(err)
	}
	agent, err := framework.StartAgentProcess(ctx, hub, spoke, mtCluster, agentMinInterval)
	if err != nil {
		t.Fatal(err)
	}
	work, err := framework.StartOCMWorkAgent(ctx, hub, spoke, mtCluster)
	if err != nil {
		t.Fatal(err)
	}
	logs = append(logs, agent, work)
	waitSchedulable(t, spoke, mtNodes())

	// The group reserves both machines, and the hub sees them free.
	if _, err := groups.MachineGroups().Create(ctx, mtGroupObject(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		return errors.Join(
			mgReservationsOn(ctx, kube, mgXLarge, []string{"xlarge-0", "xlarge-1"}),
			mgUsage(ctx, groups, mgMachines(mgXLarge, 2, 2, 0, 0)),
		)
	})
	framework.Eventually(t, func(ctx context.Context) error {
		return mgHubUsage(ctx, hubFleetfit, mtCluster, mgMachines(mgXLarge, 2, 2, 0, 0))
	})

	hubProcess, err := framework.StartHubProcess(ctx, hub)
	if err != nil {
		t.Fatal(err)
	}
	// The process outlives ctx: stop it with the test, or the next test's hub would schedule
	// the same placements beside it, each counting room the other took.
	t.Cleanup(hubProcess.Stop)
	logs = append(logs, hubProcess)
	// The hub's objects of an earlier run (-count) are taken as they are.
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mtNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet("default"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(mtNS).Create(ctx, ut.MakeClusterSetBinding(mtNS, "default"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta1().Placements(mtNS).Create(ctx, ut.MakePlacement(mtWorkload, mtNS).NumberOfClusters(1).Obj(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	xlarge := ut.MakeRequirement("xlarge").Obj()
	xlarge.MachineType = &v1alpha1.MachineTypeRequirement{Group: mgGroup, Name: mgXLarge}
	intent := ut.MakeHPAIntent(mtWorkload, mtNS).Placement(mtWorkload).Consumer(
		ut.MakeConsumer(mtWorkload).Target("Deployment", mtWorkload, mtTrain).Requirement(xlarge).Obj(),
	).Manifest(mtDeployment()).Obj()
	if _, err := intents.Create(ctx, intent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The hub decides cluster4, the only cluster with free compute-xlarge.
	framework.Eventually(t, func(ctx context.Context) error {
		d, err := clusters.ClusterV1beta1().PlacementDecisions(mtNS).Get(ctx, mtWorkload+"-decision-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(d.Status.Decisions) != 1 || d.Status.Decisions[0].ClusterName != mtCluster {
			return fmt.Errorf("decisions %+v, want %s", d.Status.Decisions, mtCluster)
		}
		return nil
	})

	// What the hub delivered: the Deployment's pods are guests of the type, with no
	// resources from the hub, in a namespace opted in to the injector again.
	framework.Eventually(t, func(ctx context.Context) error {
		d, err := kube.AppsV1().Deployments(mtNS).Get(ctx, mtWorkload, metav1.GetOptions{})
		if err != nil {
			return err
		}
		want := machinegroup.GuestLabels(mgGroup, mgXLarge, mtTrain)
		want["app"] = mtWorkload
		// Every delivered pod names its intent, so that the agent can report it if it waits.
		want[v1alpha1.LabelIntentNamespace], want[v1alpha1.LabelIntentName] = mtNS, v1alpha1.IntentLabelValue(mtWorkload)
		if diff := cmp.Diff(want, d.Spec.Template.Labels); diff != "" {
			return fmt.Errorf("delivered pod template labels (-want +got):\n%s", diff)
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
				return fmt.Errorf("the hub gave container %s resources %+v", c.Name, c.Resources)
			}
		}
		return mtNamespaceOptedIn(ctx, spoke, true)
	})

	// The injector gives the guests the type; they take over both reservations and run on the
	// type's nodes, one machine each.
	var guests []corev1.Pod
	framework.Eventually(t, func(ctx context.Context) error {
		pods, err := kube.CoreV1().Pods(mtNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + mtWorkload})
		if err != nil {
			return err
		}
		guests = pods.Items
		var nodes []string
		for _, p := range guests {
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("guest %s is %s on %q, want Running", p.Name, p.Status.Phase, p.Spec.NodeName)
			}
			nodes = append(nodes, p.Spec.NodeName)
		}
		slices.Sort(nodes)
		if diff := cmp.Diff([]string{"xlarge-0", "xlarge-1"}, nodes); diff != "" {
			return fmt.Errorf("guests' nodes (-want +got):\n%s", diff)
		}
		return errors.Join(
			mgReservationsOn(ctx, kube, mgXLarge, nil),
			mgUsage(ctx, groups, mgMachines(mgXLarge, 2, 0, 2, 0)),
		)
	})
	want := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("40"), corev1.ResourceMemory: resource.MustParse("128Gi"), gpu: resource.MustParse("2"),
	}
	for _, p := range guests {
		for _, c := range p.Spec.Containers {
			switch c.Name {
			case mtTrain:
				if !mgSameAmounts(c.Resources.Requests, want) || !mgSameAmounts(c.Resources.Limits, want) {
					t.Errorf("pod %s: container %s has requests %v and limits %v, want both %v", p.Name, c.Name, c.Resources.Requests, c.Resources.Limits, want)
				}
			default:
				if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
					t.Errorf("pod %s: container %s got resources %+v; only %s should", p.Name, c.Name, c.Resources, mtTrain)
				}
			}
		}
	}

	// The hub sees the machines used, and the intent the delivery with its replicas ready.
	framework.Eventually(t, func(ctx context.Context) error {
		return mgHubUsage(ctx, hubFleetfit, mtCluster, mgMachines(mgXLarge, 2, 0, 2, 0))
	})
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, mtWorkload, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs := in.Status.Clusters
		if len(cs) != 1 || cs[0].ClusterName != mtCluster || cs[0].State != v1alpha1.DeliveryAvailable ||
			!strings.Contains(cs[0].Message, "Deployment "+mtWorkload+": 2/2 ready") {
			return fmt.Errorf("status.clusters %+v, want %s Available with 2/2 replicas ready", cs, mtCluster)
		}
		if !meta.IsStatusConditionTrue(in.Status.Conditions, v1alpha1.ConditionDelivered) {
			return fmt.Errorf("conditions %+v, want Delivered=True", in.Status.Conditions)
		}
		return nil
	})

	// Deleting the intent takes the guests away, and the machines go back to reservations.
	if err := intents.Delete(ctx, mtWorkload, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		pods, err := kube.CoreV1().Pods(mtNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + mtWorkload})
		if err != nil {
			return err
		}
		if n := len(pods.Items); n > 0 {
			return fmt.Errorf("%s still has %d guests", mtCluster, n)
		}
		return errors.Join(
			mgReservationsOn(ctx, kube, mgXLarge, []string{"xlarge-0", "xlarge-1"}),
			mgUsage(ctx, groups, mgMachines(mgXLarge, 2, 2, 0, 0)),
		)
	})
	framework.Eventually(t, func(ctx context.Context) error {
		return mgHubUsage(ctx, hubFleetfit, mtCluster, mgMachines(mgXLarge, 2, 2, 0, 0))
	})
}

// mtNamespaceOptedIn checks whether mtNS on the spoke carries the injector's opt-in label.
func mtNamespaceOptedIn(ctx context.Context, spoke *framework.ControlPlane, want bool) error {
	ns, err := spoke.AdminClient().CoreV1().Namespaces().Get(ctx, mtNS, metav1.GetOptions{})
	if err != nil {
		return err
	}
	optIn := labels.SelectorFromSet(labels.Set{machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled})
	if got := optIn.Matches(labels.Set(ns.Labels)); got != want {
		return fmt.Errorf("namespace %s has labels %v: opted in to the injector %v, want %v", mtNS, ns.Labels, got, want)
	}
	return nil
}
