package hpa

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const (
	gpu = "nvidia.com/gpu"
	qat = "intel.com/qat"
)

// analyticsHPAIntent is the analytics app of EMCO's usage example: ai-model (the StatefulSet
// ai-model's container openvino) needs at least 2 cpu with no upper limit; logger (the
// Deployment logger's container logger) needs a QuickAssist accelerator.
func analyticsHPAIntent() *utiltesting.HPAIntentWrapper {
	return utiltesting.MakeHPAIntent("analytics", "").
		Placement("analytics").
		Consumer(
			utiltesting.MakeConsumer("ai-model").
				Target("StatefulSet", "ai-model", "openvino").
				Requirement(utiltesting.MakeResource("ai-model-cpu-requirement", "cpu").Requests("2").Obj()).Obj(),
			utiltesting.MakeConsumer("logger").
				Target("Deployment", "logger", "logger").
				Requirement(utiltesting.MakeResource("logger-qat-needs", qat).Requests("1").Limits("1").Obj()).Obj(),
		)
}

// TestEMCOUsageExample: EMCO's fwall and analytics apps land where their requirements fit.
// cluster1 has a GPU node, cluster2 small nodes of which one has a QuickAssist card, cluster3
// two 4-cpu nodes. fwall's core-fwall needs 4 exclusive cores on one node (cluster1 or
// cluster3) and prefers a GPU (cluster1); analytics' logger needs QuickAssist (cluster2 only).
func TestEMCOUsageExample(t *testing.T) {
	e := newEnv(t, "emco")
	e.addNodes(0, node("emco-gpu", "8", "16Gi").Resource(gpu, "1").Label("nvidia.com/gpu.product", "A100"))
	e.addNodes(1, node("emco-qat", "1", "2Gi").Resource(qat, "1"), node("emco-small", "2", "4Gi"))
	e.addNodes(2, node("emco-cpu-0", "4", "8Gi"), node("emco-cpu-1", "4", "8Gi"))

	e.createIntent(utiltesting.FwallHPAIntent(e.ns))
	e.createIntent(analyticsHPAIntent())
	e.createPlacement(onClusters(utiltesting.FwallName, cluster(0), cluster(1), cluster(2)).NumberOfClusters(1))
	e.createPlacement(onClusters("analytics", cluster(0), cluster(1), cluster(2)))
	e.startHub(false)

	e.waitDecided(utiltesting.FwallName, cluster(0))
	e.waitDecided("analytics", cluster(1))

	in := e.waitIntent(utiltesting.FwallName, and(
		hasCondition(v1alpha1.ConditionValid, metav1.ConditionTrue, "Valid"),
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		// core-fwall's 4 cores fit on one node of cluster1 and cluster3 only; api-server's
		// single core fits everywhere (an empty deny list).
		hasCandidates(
			deny(utiltesting.FwallCoreConsumer, 1, cluster(1)),
			deny(utiltesting.FwallAPIConsumer, 1),
		),
	))
	if want := fmt.Sprintf("Placement fwall decides 1 cluster(s): %s", cluster(0)); scheduledMessage(in) != want {
		t.Errorf("fwall Scheduled message %q, want %q", scheduledMessage(in), want)
	}
	in = e.waitIntent("analytics", and(
		hasCondition(v1alpha1.ConditionValid, metav1.ConditionTrue, "Valid"),
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(
			deny("ai-model", 1),
			allow("logger", 1, cluster(1)),
		),
	))
	if want := fmt.Sprintf("Placement analytics decides 1 cluster(s): %s", cluster(1)); scheduledMessage(in) != want {
		t.Errorf("analytics Scheduled message %q, want %q", scheduledMessage(in), want)
	}
}

// TestOptionalGPUWeight: fwall's optional GPU (weight 9) ranks clusters without excluding
// any. With numberOfClusters 1 the GPU cluster wins; with 3, the CPU-only cluster that meets
// the mandatory requirements is chosen too, and the one too small for core-fwall's 4 cores is
// not.
func TestOptionalGPUWeight(t *testing.T) {
	e := newEnv(t, "optional-gpu")
	e.addNodes(0, node("opt-gpu", "16", "32Gi").Resource(gpu, "1"))
	e.addNodes(1, node("opt-cpu", "16", "32Gi"))
	e.addNodes(2, node("opt-small", "2", "32Gi"))
	all := []string{cluster(0), cluster(1), cluster(2)}

	e.createIntent(utiltesting.FwallHPAIntent(e.ns).Placement("one"))
	e.createPlacement(onClusters("one", all...).NumberOfClusters(1))
	e.startHub(false)
	e.waitDecided("one", cluster(0))

	wide := utiltesting.FwallHPAIntent(e.ns).Placement("three")
	wide.Name = "fwall-three"
	e.createIntent(wide)
	e.createPlacement(onClusters("three", all...).NumberOfClusters(3))
	e.waitDecided("three", cluster(0), cluster(1))
	in := e.waitIntent("fwall-three", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(
			deny(utiltesting.FwallCoreConsumer, 1, cluster(2)),
			deny(utiltesting.FwallAPIConsumer, 1),
		),
	))
	msg := scheduledMessage(in)
	if !strings.HasPrefix(msg, "Placement three decides 2 cluster(s): ") || !strings.Contains(msg, cluster(0)) || !strings.Contains(msg, cluster(1)) {
		t.Errorf("Scheduled message %q, want it to name the 2 clusters %s and %s", msg, cluster(0), cluster(1))
	}
	// The first placement stays on the GPU cluster.
	got, err := e.decided(t.Context(), "one")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != cluster(0) {
		t.Errorf("placement one decides %v, want [%s]", got, cluster(0))
	}
}
