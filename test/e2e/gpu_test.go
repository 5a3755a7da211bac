package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/typed/fleetfit/v1alpha1"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

const (
	// ns holds the Placement and the HPAIntent on the hub, and the workload on the spoke.
	ns         = "e2e"
	workload   = "trainer"
	gpuProduct = "nvidia.com/gpu.product"
	gpu        = corev1.ResourceName("nvidia.com/gpu")
	// agentMinInterval lets the agents report the pods' consumption soon after it changes.
	agentMinInterval = 500 * time.Millisecond
	// logLines is how much of each process's log a failure shows.
	logLines = 25
)

// gpuNode is a GPU node as GPU feature discovery and the device plugin leave it: the model
// as a label, the GPUs as an extended resource, and a taint that keeps other pods away.
func gpuNode(name, product, gpus string) *corev1.Node {
	return ut.MakeNode(name).Resource("cpu", "16").Resource("memory", "64Gi").Resource(gpu, gpus).
		Label(gpuProduct, product).Taint(string(gpu), "present", corev1.TaintEffectNoSchedule).Obj()
}

// cpuNode is a node with plenty of room and no GPU.
func cpuNode(name string) *corev1.Node {
	return ut.MakeNode(name).Resource("cpu", "32").Resource("memory", "128Gi").Obj()
}

// trainerDeployment is the workload as its author wrote it: two replicas and nothing about
// GPUs, which the intent adds.
func trainerDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": workload}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: workload},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: workload, Image: "registry.k8s.io/pause:3.10",
				}}},
			},
		},
	}
}

// TestGPUWorkloadRunsOnTheA100Node follows a workload that needs an A100 GPU from the hub to
// running pods: cluster1 has an A100 node, a T4 node and a CPU node with room to spare,
// cluster2 a T4 node and a CPU node. fleetfit-hub must pick cluster1 and deliver the Deployment
// mutated so that kube-scheduler puts both pods on the A100 node; the agent must then report
// the GPUs and cores they took, the intent the delivery, and all of it must be undone when the
// intent is deleted.
func TestGPUWorkloadRunsOnTheA100Node(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	fleetfit := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1()
	intents := fleetfit.HPAIntents(ns)
	spoke1 := fleet.Spokes[0].AdminClient()
	spoke2 := fleet.Spokes[1].AdminClient()

	var logs []*framework.Component
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		if in, err := intents.Get(ctx, workload, metav1.GetOptions{}); err == nil {
			t.Logf("intent status: %+v", in.Status)
		}
		if d, err := clusters.ClusterV1beta1().PlacementDecisions(ns).Get(ctx, workload+"-decision-1", metav1.GetOptions{}); err == nil {
			t.Logf("decisions: %+v", d.Status.Decisions)
		}
		for i, spoke := range fleet.Spokes {
			if pods, err := spoke.AdminClient().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
				for _, p := range pods.Items {
					t.Logf("%s: pod %s on %q: %s %+v", framework.SpokeName(i), p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
				}
			}
		}
		for _, c := range logs {
			t.Logf("--- %s ---\n%s", c.Name(), c.LogTail(logLines))
		}
	})

	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := [][]*corev1.Node{
		{gpuNode("a100-0", "A100", "4"), gpuNode("t4-0", "T4", "4"), cpuNode("cpu-0")},
		{gpuNode("t4-0", "T4", "4"), cpuNode("cpu-0")},
	}
	for i, spoke := range fleet.Spokes {
		name := framework.SpokeName(i)
		runtime, err := framework.StartPodRuntime(ctx, spoke)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, runtime.ControllerManager, runtime.Scheduler, runtime.Kwok)
		for _, n := range nodes[i] {
			if _, err := framework.CreateKwokNode(ctx, spoke.AdminClient(), n); err != nil {
				t.Fatal(err)
			}
		}
		if err := framework.ApplyAgentRBAC(ctx, hub, spoke, name); err != nil {
			t.Fatal(err)
		}
		if err := framework.GrantDelivery(ctx, spoke, ns); err != nil {
			t.Fatal(err)
		}
		agent, err := framework.StartAgentProcess(ctx, hub, spoke, name, agentMinInterval)
		if err != nil {
			t.Fatal(err)
		}
		work, err := framework.StartOCMWorkAgent(ctx, hub, spoke, name)
		if err != nil {
			t.Fatal(err)
		}
		logs = append(logs, agent, work)
	}

	// kwok makes the nodes Ready, the node lifecycle controller lifts the not-ready taint, and
	// the agents report them; the A100 node has all its GPUs free.
	for i, spoke := range fleet.Spokes {
		framework.Eventually(t, func(ctx context.Context) error {
			for _, want := range nodes[i] {
				n, err := spoke.AdminClient().CoreV1().Nodes().Get(ctx, want.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				if err := framework.NodeSchedulable(n); err != nil {
					return err
				}
			}
			return nil
		})
		name := framework.SpokeName(i)
		framework.Eventually(t, func(ctx context.Context) error {
			inv, err := fleetfit.ClusterInventories(name).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if got, want := inv.Status.ReadyNodeCount, int32(len(nodes[i])); got != want {
				return fmt.Errorf("inventory of %s shows %d ready nodes, want %d", name, got, want)
			}
			return nil
		})
	}
	framework.Eventually(t, func(ctx context.Context) error {
		return a100Consumption(ctx, fleetfit, "0", "0", "4")
	})

	hubProcess, err := framework.StartHubProcess(ctx, hub)
	if err != nil {
		t.Fatal(err)
	}
	// The process outlives ctx: stop it with the test, or the next test's hub would schedule
	// the same placements beside it, each counting room the other took.
	t.Cleanup(hubProcess.Stop)
	logs = append(logs, hubProcess)

	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet("default"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, ut.MakeClusterSetBinding(ns, "default"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta1().Placements(ns).Create(ctx, ut.MakePlacement(workload, ns).NumberOfClusters(1).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	intent := ut.MakeHPAIntent(workload, ns).Placement(workload).Consumer(
		ut.MakeConsumer(workload).Target("Deployment", workload, workload).Requirement(
			ut.MakeResource("cpu", "cpu").Requests("2").Limits("4").Obj(),
			ut.MakeResource("memory", "memory").Requests("8Gi").Limits("8Gi").Obj(),
			ut.MakeResource("gpu", string(gpu)).Limits("1").Obj(),
			ut.MakeFeature("a100", gpuProduct).Values("A100").Obj(),
		).Obj(),
	).Manifest(trainerDeployment()).Obj()
	if _, err := intents.Create(ctx, intent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The hub decides cluster1, the only cluster with an A100.
	framework.Eventually(t, func(ctx context.Context) error {
		d, err := clusters.ClusterV1beta1().PlacementDecisions(ns).Get(ctx, workload+"-decision-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(d.Status.Decisions) != 1 || d.Status.Decisions[0].ClusterName != "cluster1" {
			return fmt.Errorf("decisions %+v, want cluster1", d.Status.Decisions)
		}
		return nil
	})

	// Both pods run on the A100 node — not on the T4 node, whose taint they tolerate, nor on
	// the CPU node, which has more room.
	framework.Eventually(t, func(ctx context.Context) error {
		pods, err := spoke1.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + workload})
		if err != nil {
			return err
		}
		if len(pods.Items) != 2 {
			return fmt.Errorf("cluster1 has %d pods of %s, want 2", len(pods.Items), workload)
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "a100-0" {
				return fmt.Errorf("pod %s is on node %q, want a100-0", p.Name, p.Spec.NodeName)
			}
			if p.Status.Phase != corev1.PodRunning {
				return fmt.Errorf("pod %s is %s, want Running", p.Name, p.Status.Phase)
			}
		}
		return nil
	})

	// The agent reports what the pods took: 2 of the A100 node's 4 GPUs and 2 × 2 cores.
	framework.Eventually(t, func(ctx context.Context) error {
		return a100Consumption(ctx, fleetfit, "2", "4", "2")
	})

	// The intent shows the delivery, with the replicas ready.
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, workload, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs := in.Status.Clusters
		if len(cs) != 1 || cs[0].ClusterName != "cluster1" || cs[0].State != v1alpha1.DeliveryAvailable ||
			!strings.Contains(cs[0].Message, "Deployment "+workload+": 2/2 ready") {
			return fmt.Errorf("status.clusters %+v, want cluster1 Available with 2/2 replicas ready", cs)
		}
		if !meta.IsStatusConditionTrue(in.Status.Conditions, v1alpha1.ConditionDelivered) {
			return fmt.Errorf("conditions %+v, want Delivered=True", in.Status.Conditions)
		}
		return nil
	})
	if _, err := spoke2.AppsV1().Deployments(ns).Get(ctx, workload, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster2 has the Deployment too (err %v)", err)
	}

	// Deleting the intent removes the Deployment, its pods go, and the GPUs are free again.
	if err := intents.Delete(ctx, workload, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		pods, err := spoke1.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + workload})
		if err != nil {
			return err
		}
		if n := len(pods.Items); n > 0 {
			return fmt.Errorf("cluster1 still has %d pods of %s", n, workload)
		}
		return nil
	})
	framework.Eventually(t, func(ctx context.Context) error {
		return a100Consumption(ctx, fleetfit, "0", "0", "4")
	})
}

// a100Consumption checks cluster1's ClusterInventory on the hub: the GPUs and cpu its pods
// request, and the most GPUs free on one node of its A100 node shape.
func a100Consumption(ctx context.Context, fleetfit fleetfitv1alpha1.FleetfitV1alpha1Interface, gpus, cpu, freeGPUs string) error {
	inv, err := fleetfit.ClusterInventories("cluster1").Get(ctx, "cluster1", metav1.GetOptions{})
	if err != nil {
		return err
	}
	requested := map[corev1.ResourceName]resource.Quantity{}
	for _, r := range inv.Status.Resources {
		requested[r.Name] = r.Requested
	}
	var free *resource.Quantity
	for _, s := range inv.Status.NodeShapes {
		if s.Labels[gpuProduct] != "A100" {
			continue
		}
		for _, v := range s.Free {
			if q, ok := v.Resources[gpu]; ok && (free == nil || q.Cmp(*free) > 0) {
				free = &q
			}
		}
	}
	var problems []string
	for name, want := range map[corev1.ResourceName]string{gpu: gpus, corev1.ResourceCPU: cpu} {
		if got := requested[name]; got.Cmp(resource.MustParse(want)) != 0 {
			problems = append(problems, fmt.Sprintf("%s requested %s, want %s", name, got.String(), want))
		}
	}
	switch {
	case free == nil:
		problems = append(problems, "no A100 node shape with free GPUs")
	case free.Cmp(resource.MustParse(freeGPUs)) != 0:
		problems = append(problems, fmt.Sprintf("A100 shape has %s GPUs free, want %s", free.String(), freeGPUs))
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("inventory of cluster1 (revision %d): %s", inv.Status.Revision, strings.Join(problems, "; "))
	}
	return nil
}
