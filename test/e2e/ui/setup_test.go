package ui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/demo"
	"github.com/fleetfit/fleetfit/test/framework"
)

const (
	// ns holds the Placements and HPAIntents on the hub, and the workload on the spokes.
	ns = "demo"
	// agentMinInterval lets the agents report the pods' consumption soon after it changes.
	agentMinInterval = 500 * time.Millisecond
	logLines         = 25
)

// startDemoFleet lays the fleet's two managed clusters out as the demo's cluster1 and cluster2
// (test/demo.Layout), with their agents, work agents and running pods, starts fleetfit-hub,
// and places two intents: "training" (an A100, delivered as a Deployment to cluster1, the only
// cluster with one) and "inference" (AVX-512 without a GPU: cluster2's CPU node). It returns
// once the training pod runs and the inventories show it.
func startDemoFleet(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	hub := fleet.Hub
	layout := demo.Layout()[:len(fleet.Spokes)]
	var logs []*framework.Component
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, c := range logs {
			t.Logf("--- %s ---\n%s", c.Name(), c.LogTail(logLines))
		}
	})

	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	for i, spoke := range fleet.Spokes {
		l := layout[i]
		runtime, err := framework.StartPodRuntime(ctx, spoke)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, runtime.ControllerManager, runtime.Scheduler, runtime.Kwok)
		for _, n := range l.Nodes {
			if _, err := framework.CreateKwokNode(ctx, spoke.AdminClient(), n); err != nil {
				t.Fatal(err)
			}
		}
		createPods(t, spoke.AdminClient(), l.Pods)
		if err := framework.ApplyAgentRBAC(ctx, hub, spoke, l.Name); err != nil {
			t.Fatal(err)
		}
		if err := framework.GrantDelivery(ctx, spoke, ns); err != nil {
			t.Fatal(err)
		}
		agent, err := framework.StartAgentProcess(ctx, hub, spoke, l.Name, agentMinInterval)
		if err != nil {
			t.Fatal(err)
		}
		work, err := framework.StartOCMWorkAgent(ctx, hub, spoke, l.Name)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, agent, work)
	}
	ff := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1()
	for _, l := range layout {
		framework.Eventually(t, func(ctx context.Context) error {
			inv, err := ff.ClusterInventories(l.Name).Get(ctx, l.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got, want := inv.Status.ReadyNodeCount, int32(len(l.Nodes)); got != want {
				return fmt.Errorf("%s reports %d ready nodes, want %d", l.Name, got, want)
			}
			return requested(inv, "cpu", podsCPU(l.Pods))
		})
	}

	hubProcess, err := framework.StartHubProcess(ctx, hub)
	if err != nil {
		t.Fatal(err)
	}
	logs = append(logs, hubProcess)
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet("default"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, ut.MakeClusterSetBinding(ns, "default"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"training", "inference"} {
		if _, err := clusters.ClusterV1beta1().Placements(ns).Create(ctx, ut.MakePlacement(p, ns).NumberOfClusters(1).Obj(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	training := ut.MakeHPAIntent("training", ns).Placement("training").Consumer(
		ut.MakeConsumer("trainer").Target("Deployment", "trainer", "trainer").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("4").Limits("4").Obj(),
			ut.MakeResource("memory", "memory").Requests("16Gi").Limits("16Gi").Obj(),
			ut.MakeResource("gpu", string(demo.ResourceGPU)).Limits("1").Obj(),
			ut.MakeFeature("a100", demo.LabelGPUProduct).Values("A100").Obj(),
		).Obj(),
	).Manifest(pauseDeployment("trainer")).Obj()
	inference := ut.MakeHPAIntent("inference", ns).Placement("inference").Consumer(
		ut.MakeConsumer("inference").Target("Deployment", "inference", "inference").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("2").Limits("2").Obj(),
			ut.MakeFeature("avx512", demo.LabelAVX512).Values("true").Obj(),
		).Obj(),
	).Obj()
	intents := ff.HPAIntents(ns)
	for _, in := range []*v1alpha1.HPAIntent{training, inference} {
		if _, err := intents.Create(ctx, in, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// The trainer runs on cluster1's A100 node, and cluster1's agent reports its 4 cores.
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, "training", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs := in.Status.Clusters
		if len(cs) != 1 || cs[0].ClusterName != "cluster1" || cs[0].State != v1alpha1.DeliveryAvailable || !strings.Contains(cs[0].Message, "1/1 ready") {
			return fmt.Errorf("training's delivery %+v, want cluster1 Available with 1/1 ready", cs)
		}
		return nil
	})
	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := ff.ClusterInventories("cluster1").Get(ctx, "cluster1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return requested(inv, "cpu", podsCPU(layout[0].Pods)+4000)
	})
	framework.Eventually(t, func(ctx context.Context) error {
		d, err := clusters.ClusterV1beta1().PlacementDecisions(ns).Get(ctx, "inference-decision-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(d.Status.Decisions) != 1 || d.Status.Decisions[0].ClusterName != "cluster2" {
			return fmt.Errorf("inference decided %+v, want cluster2", d.Status.Decisions)
		}
		return nil
	})
}

// createPods creates the pods already running on a cluster. The namespace's default
// ServiceAccount, which the ServiceAccount admission requires, comes from the controller
// manager a moment after the namespace.
func createPods(t *testing.T, client kubernetes.Interface, pods []*corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: demo.PodNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, p := range pods {
		framework.Eventually(t, func(ctx context.Context) error {
			_, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return nil
			}
			return err
		})
	}
}

func podsCPU(pods []*corev1.Pod) int64 {
	var milli int64
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			milli += c.Resources.Requests.Cpu().MilliValue()
		}
	}
	return milli
}

// requested checks that the inventory counts milli of name requested.
func requested(inv *v1alpha1.ClusterInventory, name corev1.ResourceName, milli int64) error {
	for _, r := range inv.Status.Resources {
		if r.Name == name {
			if want := resource.NewMilliQuantity(milli, resource.DecimalSI); r.Requested.Cmp(*want) != 0 {
				return fmt.Errorf("%s reports %s %s requested, want %s", inv.Namespace, r.Requested.String(), name, want.String())
			}
			return nil
		}
	}
	return fmt.Errorf("%s reports no %s", inv.Namespace, name)
}

// pauseDeployment is a workload of one replica that does nothing; its intent adds what it needs.
func pauseDeployment(name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}
