package hpa

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestSplitFollowsRoomPerNode: a split intent of 4-core replicas on nodes labelled for this
// test. cluster1 has two 6-core nodes (12 cores, but room for 2 replicas: one per node),
// cluster2 one 16-core node (room for 4). The hub runs as a process; no pod ever runs, so its
// reservations hold the shares. 5 replicas are divided 2 and 3 (clusters in name order, as
// only HardwareFit scores); 8 fill cluster2 to 4 and leave 2 waiting; a node added to
// cluster1 then takes one of them, with no cycle of anything else needed.
func TestSplitFollowsRoomPerNode(t *testing.T) {
	const label = "fleetfit.io/split-test"
	e := newEnv(t, "split")
	e.addNodes(0, node("split-a-0", "6", "32Gi").Label(label, "true"), node("split-a-1", "6", "32Gi").Label(label, "true"))
	e.addNodes(1, node("split-b-0", "16", "64Gi").Label(label, "true"))
	e.startHub(false)

	e.createIntent(oneConsumer("split", 5,
		utiltesting.MakeResource("cpu", "cpu").Requests("4").Obj(),
		utiltesting.MakeFeature("labelled", label).Operator(corev1.NodeSelectorOpExists).Obj(),
	).Split(v1alpha1.ReplicaSplit{}))
	e.createPlacement(onClusters("split", cluster(0), cluster(1)).NumberOfClusters(2).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("HardwareFit", 1))

	e.waitIntent("split", hasSplit(map[string]int32{cluster(0): 2, cluster(1): 3}, 0))
	e.waitDecided("split", cluster(0), cluster(1))
	e.waitIntent("split", hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"))

	// A larger total fills the room of the clusters that run it; what has no room waits.
	e.updateIntent("split", func(in *v1alpha1.HPAIntent) { in.Spec.Consumers[0].Replicas = ptr.To[int32](8) })
	in := e.waitIntent("split", and(hasSplit(map[string]int32{cluster(0): 2, cluster(1): 4}, 2),
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "PartlyScheduled")))
	t.Logf("8 replicas: %s", scheduledMessage(in))

	// Room on a decided cluster places a waiting replica.
	e.addNodes(0, node("split-a-2", "6", "32Gi").Label(label, "true"))
	e.waitIntent("split", hasSplit(map[string]int32{cluster(0): 3, cluster(1): 4}, 1))
	e.waitDecided("split", cluster(0), cluster(1))
}

// TestSplitAllOrNothing: with allOrNothing, 8 replicas that the two clusters (room for 6) do
// not hold are not placed at all, and the intent says why; a node that makes room for the
// rest places them all at once.
func TestSplitAllOrNothing(t *testing.T) {
	const label = "fleetfit.io/split-all-test"
	e := newEnv(t, "split-all")
	e.addNodes(0, node("split-all-a-0", "6", "32Gi").Label(label, "true"), node("split-all-a-1", "6", "32Gi").Label(label, "true"))
	e.addNodes(1, node("split-all-b-0", "16", "64Gi").Label(label, "true"))
	e.startHub(false)

	e.createIntent(oneConsumer("all", 8,
		utiltesting.MakeResource("cpu", "cpu").Requests("4").Obj(),
		utiltesting.MakeFeature("labelled", label).Operator(corev1.NodeSelectorOpExists).Obj(),
	).Split(v1alpha1.ReplicaSplit{AllOrNothing: true}))
	e.createPlacement(onClusters("all", cluster(0), cluster(1)).NumberOfClusters(2).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("HardwareFit", 1))

	in := e.waitIntent("all", and(hasSplit(map[string]int32{}, 8), hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "")))
	t.Logf("8 replicas, room for 6: %s", scheduledMessage(in))
	e.waitDecided("all")

	e.addNodes(1, node("split-all-b-1", "8", "32Gi").Label(label, "true"))
	e.waitIntent("all", hasSplit(map[string]int32{cluster(0): 2, cluster(1): 6}, 0))
	e.waitDecided("all", cluster(0), cluster(1))
}

// hasSplit checks the intent's split status: its shares by cluster and what waits.
func hasSplit(want map[string]int32, unplaced int32) func(*v1alpha1.HPAIntent) error {
	return func(in *v1alpha1.HPAIntent) error {
		if in.Status.Split == nil {
			return fmt.Errorf("no split status yet")
		}
		got := map[string]int32{}
		for _, sh := range in.Status.Split.Shares {
			got[sh.ClusterName] = sh.Replicas
		}
		if diff := cmp.Diff(want, got); diff != "" || in.Status.Split.Unplaced != unplaced {
			return fmt.Errorf("split %v with %d unplaced, want %v with %d (-want +got):\n%s", got, in.Status.Split.Unplaced, want, unplaced, diff)
		}
		return nil
	}
}
