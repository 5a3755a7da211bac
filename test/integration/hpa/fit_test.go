package hpa

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/hpaintent"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// oneConsumer is an intent named after its placement with one consumer "app" (the Deployment
// app's container main) of the given replicas and requirements.
func oneConsumer(placement string, replicas int32, reqs ...v1alpha1.ResourceRequirement) *utiltesting.HPAIntentWrapper {
	return utiltesting.MakeHPAIntent(placement, "").Placement(placement).Consumer(
		utiltesting.MakeConsumer("app").Target("Deployment", "app", "main").Replicas(replicas).Requirement(reqs...).Obj())
}

// rejectedBy checks that explain rejects cluster with HardwareFit for a reason containing
// every part, and selects the clusters in selected.
func rejectedBy(cluster string, selected []string, parts ...string) func(map[string]string) error {
	return func(verdicts map[string]string) error {
		for _, s := range selected {
			if verdicts[s] != "selected" {
				return fmt.Errorf("explain: %s is %q, want selected; all: %v", s, verdicts[s], verdicts)
			}
		}
		v := verdicts[cluster]
		if !strings.HasPrefix(v, "HardwareFit: ") {
			return fmt.Errorf("explain: %s is %q, want rejected by HardwareFit", cluster, v)
		}
		for _, p := range parts {
			if !strings.Contains(v, p) {
				return fmt.Errorf("explain: %s is %q, want it to mention %q", cluster, v, p)
			}
		}
		return nil
	}
}

// TestFragmentation: cluster1 has ten nodes with 8 free cpu each (80 in all), cluster2 two
// nodes with 16. A consumer needing 12 cpu goes to cluster2 only, and both explain and the
// Scheduled condition of a placement that can only use cluster1 name the best node's 8.
func TestFragmentation(t *testing.T) {
	e := newEnv(t, "fragmentation")
	for i := range 10 {
		name := fmt.Sprintf("frag-a-%d", i)
		e.addNodes(0, node(name, "10", "32Gi"))
		e.addPod(0, name, cpu("2"))
	}
	e.addNodes(1, node("frag-b-0", "16", "64Gi"), node("frag-b-1", "16", "64Gi"))
	needs12 := utiltesting.MakeResource("cpu", "cpu").Requests("12").Obj()

	e.createIntent(oneConsumer("frag", 1, needs12))
	e.createPlacement(onClusters("frag", cluster(0), cluster(1)))
	e.createIntent(oneConsumer("frag-only-a", 1, needs12))
	e.createPlacement(onClusters("frag-only-a", cluster(0)))
	e.startHub(true)

	e.waitDecided("frag", cluster(1))
	e.waitIntent("frag", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(allow("app", 1, cluster(1))),
	))
	e.explain("frag", rejectedBy(cluster(0), []string{cluster(1)}, "12 cpu", "the best has 8"))

	in := e.waitIntent("frag-only-a", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "NoFeasibleCluster"),
		hasCandidates(allow("app", 1)), // the only eligible cluster cannot host it
	))
	want := fmt.Sprintf("%s: consumer frag-only-a/app: no schedulable node has 12 cpu free; the best has 8", cluster(0))
	if msg := scheduledMessage(in); !strings.HasPrefix(msg, "no cluster can host Placement frag-only-a: ") || !strings.Contains(msg, want) {
		t.Errorf("Scheduled message %q, want it to say %q", msg, want)
	}
	e.waitDecided("frag-only-a")

	// The cluster was rejected although its aggregate free cpu is far larger.
	inv, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(cluster(0)).Get(t.Context(), cluster(0), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range inv.Status.Resources {
		if r.Name == corev1.ResourceCPU && r.Free.Value() != 80 {
			t.Errorf("%s reports %s free cpu, want 80", cluster(0), r.Free.String())
		}
	}
}

// TestPackingPerNode: twenty replicas of 5 cpu (100 in all). cluster1's thirteen 8-cpu nodes
// have 104 free but hold one replica each; cluster2's five 20-cpu nodes hold four each, exactly
// twenty. Only cluster2 is feasible.
func TestPackingPerNode(t *testing.T) {
	e := newEnv(t, "packing")
	for i := range 13 {
		e.addNodes(0, node(fmt.Sprintf("pack-a-%d", i), "8", "32Gi"))
	}
	for i := range 5 {
		e.addNodes(1, node(fmt.Sprintf("pack-b-%d", i), "20", "64Gi"))
	}
	e.createIntent(oneConsumer("pack", 20, utiltesting.MakeResource("cpu", "cpu").Requests("5").Obj()))
	e.createPlacement(onClusters("pack", cluster(0), cluster(1)))
	e.startHub(true)

	e.waitDecided("pack", cluster(1))
	e.waitIntent("pack", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(allow("app", 20, cluster(1))),
	))
	e.explain("pack", rejectedBy(cluster(0), []string{cluster(1)}, "only 13 of 20 replicas fit"))
}

// TestGPUAndCPUOnDifferentNodes: on cluster1 the GPU node has no cpu left (a pod takes 7.5 of
// its 8) and the 16-cpu node has no GPU; together they have all a pod needing 2 cpu and a GPU
// asks for, but no node has both. cluster2's one node with 4 cpu and a GPU is chosen.
func TestGPUAndCPUOnDifferentNodes(t *testing.T) {
	e := newEnv(t, "gpu-and-cpu")
	e.addNodes(0, node("gc-gpu", "8", "32Gi").Resource(gpu, "1"), node("gc-cpu", "16", "32Gi"))
	e.addPod(0, "gc-gpu", cpu("7500m"))
	e.addNodes(1, node("gc-both", "4", "16Gi").Resource(gpu, "1"))
	e.createIntent(oneConsumer("gpu", 1,
		utiltesting.MakeResource("cpu", "cpu").Requests("2").Obj(),
		utiltesting.MakeResource("gpu", gpu).Limits("1").Obj(),
	))
	e.createPlacement(onClusters("gpu", cluster(0), cluster(1)))
	e.startHub(true)

	e.waitDecided("gpu", cluster(1))
	e.waitIntent("gpu", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(allow("app", 1, cluster(1))),
	))
	e.explain("gpu", rejectedBy(cluster(0), []string{cluster(1)}, "2 cpu", "1 "+gpu, "free at once"))
}

// TestForbiddenFeatures: NotIn and DoesNotExist forbid node features (OpenStack's forbidden
// traits), and both hold on the same node. cluster1's node is AMD; cluster2 has an Intel node
// in maintenance and an AMD node that is not; only cluster3's Intel node without maintenance
// qualifies.
func TestForbiddenFeatures(t *testing.T) {
	const (
		vendor      = "feature.node.kubernetes.io/cpu-model.vendor_id"
		maintenance = "fleetfit.io/maintenance"
	)
	e := newEnv(t, "forbidden")
	e.addNodes(0, node("ff-amd", "4", "16Gi").Label(vendor, "AMD"))
	e.addNodes(1, node("ff-maint", "4", "16Gi").Label(vendor, "Intel").Label(maintenance, "true"),
		node("ff-amd-2", "4", "16Gi").Label(vendor, "AMD"))
	e.addNodes(2, node("ff-intel", "4", "16Gi").Label(vendor, "Intel"))
	e.createIntent(oneConsumer("forbidden", 1,
		utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj(),
		utiltesting.MakeFeature("not-amd", vendor).Operator(corev1.NodeSelectorOpNotIn).Values("AMD").Obj(),
		utiltesting.MakeFeature("not-in-maintenance", maintenance).Operator(corev1.NodeSelectorOpDoesNotExist).Obj(),
	))
	e.createPlacement(onClusters("forbidden", cluster(0), cluster(1), cluster(2)))
	e.startHub(true)

	e.waitDecided("forbidden", cluster(2))
	e.waitIntent("forbidden", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(allow("app", 1, cluster(2))),
	))
	verdicts := e.explain("forbidden", rejectedBy(cluster(0), []string{cluster(2)}, "no schedulable node with"))
	if v := verdicts[cluster(1)]; !strings.HasPrefix(v, "HardwareFit: ") || !strings.Contains(v, "no schedulable node with") {
		t.Errorf("explain: %s is %q, want rejected by HardwareFit for its nodes' features", cluster(1), v)
	}
}

// TestLimitsOnly: requirements with limits and no requests are scheduled as requests = limits,
// as Kubernetes defaults them. The consumer's limits are 6 cpu and 4Gi: cluster1's 4-cpu node
// would hold it if the limits were ignored, cluster2's 8-cpu node holds it.
func TestLimitsOnly(t *testing.T) {
	e := newEnv(t, "limits-only")
	e.addNodes(0, node("lo-small", "4", "16Gi"))
	e.addNodes(1, node("lo-big", "8", "16Gi"))
	e.createIntent(oneConsumer("limits", 1,
		utiltesting.MakeResource("cpu", "cpu").Limits("6").Obj(),
		utiltesting.MakeResource("memory", "memory").Limits("4Gi").Obj(),
	))
	e.createPlacement(onClusters("limits", cluster(0), cluster(1)))
	e.startHub(true)

	e.waitDecided("limits", cluster(1))
	e.waitIntent("limits", and(
		hasCondition(v1alpha1.ConditionValid, metav1.ConditionTrue, hpaintent.ReasonValid),
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(allow("app", 1, cluster(1))),
	))
	e.explain("limits", rejectedBy(cluster(0), []string{cluster(1)}, "6 cpu", "the best has 4"))
}
