package hpa

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestBurstDoesNotOvercommit: cluster1 has two 4-cpu nodes labelled fast, room for exactly two
// consumers of 4 cpu; cluster2 has a 16-cpu node without the label. Three placements (one
// cluster each, ranked only by HardwareFit) whose intents prefer fast nodes are created in a
// burst against a running hub with its default workers. No pod is ever created, so the
// inventories never change: only the hub's in-flight reservations keep the third one off
// cluster1.
func TestBurstDoesNotOvercommit(t *testing.T) {
	const fast = "fleetfit.io/fast"
	e := newEnv(t, "burst")
	e.addNodes(0, node("burst-a-0", "4", "16Gi").Label(fast, "true"), node("burst-a-1", "4", "16Gi").Label(fast, "true"))
	e.addNodes(1, node("burst-b-0", "16", "64Gi"))
	e.startHub(false)

	const n = 3
	for i := range n {
		name := fmt.Sprintf("burst-%d", i)
		e.createIntent(oneConsumer(name, 1,
			utiltesting.MakeResource("cpu", "cpu").Requests("4").Obj(),
			utiltesting.MakeFeature("fast", fast).Operator(corev1.NodeSelectorOpExists).Optional(10).Obj(),
		))
		e.createPlacement(onClusters(name, cluster(0), cluster(1)).NumberOfClusters(1).
			Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("HardwareFit", 1))
	}

	perCluster := func(ctx context.Context) (map[string]int, error) {
		counts := map[string]int{}
		for i := range n {
			got, err := e.decided(ctx, fmt.Sprintf("burst-%d", i))
			if err != nil {
				return nil, err
			}
			if len(got) != 1 {
				return nil, fmt.Errorf("burst-%d decides %v, want one cluster", i, got)
			}
			counts[got[0]]++
		}
		return counts, nil
	}
	var counts map[string]int
	e.eventually(func(ctx context.Context) error {
		var err error
		counts, err = perCluster(ctx)
		return err
	})
	if counts[cluster(0)] > 2 {
		t.Fatalf("%d placements decide %s, which has room for 2: over-committed (placements per cluster: %v)", counts[cluster(0)], cluster(0), counts)
	}
	if counts[cluster(0)] != 2 || counts[cluster(1)] != 1 {
		t.Errorf("placements per cluster %v, want 2 on %s (preferred, room for 2) and 1 on %s", counts, cluster(0), cluster(1))
	}
	for i := range n {
		e.waitIntent(fmt.Sprintf("burst-%d", i), hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"))
	}
	// Nothing moves later either: the reservations outlive this check.
	framework.Consistently(t, 2*time.Second, func(ctx context.Context) error {
		got, err := perCluster(ctx)
		if err == nil && (got[cluster(0)] != counts[cluster(0)] || got[cluster(1)] != counts[cluster(1)]) {
			err = fmt.Errorf("placements per cluster changed from %v to %v", counts, got)
		}
		return err
	})
}

// TestReservationsSurviveRestart: as TestBurstDoesNotOvercommit, two placements take the room
// of cluster1's two fast nodes, but the hub is then stopped and a new one (a restart, or a new
// leader) schedules the third. No pod ever runs, so only the reservations the first hub
// persisted in the intents' status keep the third placement off cluster1.
func TestReservationsSurviveRestart(t *testing.T) {
	const fast = "fleetfit.io/fast"
	e := newEnv(t, "restart")
	e.addNodes(0, node("restart-a-0", "4", "16Gi").Label(fast, "true"), node("restart-a-1", "4", "16Gi").Label(fast, "true"))
	e.addNodes(1, node("restart-b-0", "16", "64Gi"))
	e.waitInventories()
	stop := framework.RunHub(t, fleet.Hub.AdminConfig())

	create := func(name string) {
		e.createIntent(oneConsumer(name, 1,
			utiltesting.MakeResource("cpu", "cpu").Requests("4").Obj(),
			utiltesting.MakeFeature("fast", fast).Operator(corev1.NodeSelectorOpExists).Optional(10).Obj(),
		))
		e.createPlacement(onClusters(name, cluster(0), cluster(1)).NumberOfClusters(1).
			Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("HardwareFit", 1))
	}
	for _, name := range []string{"restart-0", "restart-1"} {
		create(name)
		e.waitDecided(name, cluster(0))
		e.waitIntent(name, func(in *v1alpha1.HPAIntent) error {
			if len(in.Status.Reservations) != 1 || in.Status.Reservations[0].ClusterName != cluster(0) {
				return fmt.Errorf("status.reservations %v, want one on %s", in.Status.Reservations, cluster(0))
			}
			return nil
		})
	}
	stop()

	framework.RunHub(t, fleet.Hub.AdminConfig())
	create("restart-2")
	e.waitDecided("restart-2", cluster(1))
	// The first two keep their cluster: the new hub changed nothing of theirs.
	for _, name := range []string{"restart-0", "restart-1"} {
		e.waitDecided(name, cluster(0))
	}
}
