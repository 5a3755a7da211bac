package hpa

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	schedframework "github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestClusterWithoutAgent: a managed cluster without a fleetfit agent has no ClusterInventory,
// so it is never feasible for an intent with resource requirements, and the intent says so; a
// placement without intents still decides it, as OCM would.
func TestClusterWithoutAgent(t *testing.T) {
	e := newEnv(t, "agentless")
	agentless := framework.SpokeName(spokes) // cluster4: no spoke, no agent
	mc := utiltesting.MakeCluster(agentless).Label("name", agentless).ClusterSet(clusterSet).Obj()
	if _, err := e.clusters.ClusterV1().ManagedClusters().Create(t.Context(), mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.clusters.ClusterV1().ManagedClusters().Delete(context.Background(), agentless, metav1.DeleteOptions{})
	})
	e.addNodes(0, node("nl-node", "4", "16Gi"))
	needs1 := utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()
	e.createIntent(oneConsumer("needs", 1, needs1))
	e.createPlacement(onClusters("needs", cluster(0), agentless))
	e.createIntent(oneConsumer("only-agentless", 1, needs1))
	e.createPlacement(onClusters("only-agentless", agentless))
	e.createPlacement(onClusters("plain", agentless))
	e.startHub(false)

	e.waitDecided("plain", agentless)
	e.waitDecided("needs", cluster(0))
	e.waitIntent("needs", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(allow("app", 1, cluster(0))),
	))
	in := e.waitIntent("only-agentless", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "NoFeasibleCluster"),
		hasCandidates(allow("app", 1)),
	))
	want := fmt.Sprintf("%s: %s", agentless, schedframework.NoInventory)
	if msg := scheduledMessage(in); !strings.HasPrefix(msg, "no cluster can host Placement only-agentless: ") || !strings.Contains(msg, want) {
		t.Errorf("Scheduled message %q, want it to say %q", msg, want)
	}
	e.waitDecided("only-agentless")
	framework.Consistently(t, framework.PollInterval*5, e.decides("needs", cluster(0)))
}
