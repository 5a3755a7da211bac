package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestSteadyKeepsDecision: in the default Additive mode (Balance and Steady, weight 1 each)
// a placement keeps the cluster it decides when an equal cluster appears, even one that sorts
// first by name and would win the tie. The same placement with Balance alone, in another
// cluster set so that Balance sees no other placement, follows its scores: OCM's cycle would
// move it to the new cluster, which wins the tie by name, but fleetfit moves a placement that
// follows its scores only to a cluster that scores clearly better (framework.StickyMargin),
// so it stays too.
func TestSteadyKeepsDecision(t *testing.T) {
	e := newEnv(t, "prio-steady")
	off := newEnv(t, "prio-steady-off")
	for _, env := range []*env{e, off} {
		env.createCluster(env.cluster("b").Label("role", "app"))
	}
	e.startHub() // one hub schedules both namespaces

	app := map[string]string{"role": "app"}
	e.createPlacement(utiltesting.MakePlacement("steady", e.ns).NumberOfClusters(1).PredicateLabels(app))
	e.createPlacement(utiltesting.MakePlacement("witness", e.ns).PredicateLabels(map[string]string{"role": "witness"}))
	// The default prioritizers without Steady. (A weight of 0 would disable Steady in the
	// Additive mode, but the API defaults an omitted weight to 1, and Go clients omit 0.)
	off.createPlacement(utiltesting.MakePlacement("no-steady", off.ns).NumberOfClusters(1).PredicateLabels(app).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("Balance", 1))
	e.waitDecided("steady", e.names("b")...)
	off.waitDecided("no-steady", off.names("b")...)

	off.createCluster(off.cluster("a").Label("role", "app"))
	// Created after a: once "witness" decides it, the hub has seen a as well.
	off.createPlacement(utiltesting.MakePlacement("witness", off.ns).PredicateLabels(map[string]string{"role": "witness"}))
	off.createCluster(off.cluster("w").Label("role", "witness"))
	off.waitDecided("witness", off.names("w")...)
	off.resync("no-steady")
	framework.Consistently(t, 3*time.Second, func(ctx context.Context) error {
		got, _, err := off.decided(ctx, "no-steady")
		if err == nil && !slices.Equal(got, off.names("b")) {
			err = fmt.Errorf("no-steady decides %v, want %v: a tie is no reason to move", got, off.names("b"))
		}
		return err
	})

	e.createCluster(e.cluster("a").Label("role", "app"))
	// Created after a: once "witness" decides it, the hub has seen a as well.
	e.createCluster(e.cluster("w").Label("role", "witness"))
	e.waitDecided("witness", e.names("w")...)
	e.resync("steady")
	e.waitDecided("steady", e.names("b")...)
	// Balance 100 (no other placement decides b) + Steady 100 (already decided).
	e.waitScores("steady", map[string]int64{e.set + "-b": 200})
}

// TestResourcePrioritizers: in the Exact mode only the configured prioritizers count.
// ResourceAllocatableCPU and ResourceAllocatableMemory prefer the cluster with the most
// allocatable resource and, with a negative weight, the one with the least; fleetfit's
// ResourceAllocatable:<name> does the same for any resource.
func TestResourcePrioritizers(t *testing.T) {
	e := newEnv(t, "prio-resource")
	const gpu clusterv1.ResourceName = "nvidia.com/gpu"
	e.createCluster(e.cluster("a").Resource(clusterv1.ResourceCPU, "2", "2").Resource(clusterv1.ResourceMemory, "64Gi", "64Gi").Resource(gpu, "4", "4"))
	e.createCluster(e.cluster("b").Resource(clusterv1.ResourceCPU, "8", "8").Resource(clusterv1.ResourceMemory, "16Gi", "16Gi"))
	e.createCluster(e.cluster("c").Resource(clusterv1.ResourceCPU, "4", "4").Resource(clusterv1.ResourceMemory, "32Gi", "32Gi").Resource(gpu, "1", "1"))
	e.startHub()

	tests := map[string]struct {
		prioritizer string
		weight      int32
		want        string
		score       int64
	}{
		"most cpu":    {prioritizer: "ResourceAllocatableCPU", weight: 1, want: "b", score: 100},
		"least cpu":   {prioritizer: "ResourceAllocatableCPU", weight: -1, want: "a", score: 100},
		"most memory": {prioritizer: "ResourceAllocatableMemory", weight: 1, want: "a", score: 100},
		"most gpus":   {prioritizer: "ResourceAllocatable:nvidia.com/gpu", weight: 2, want: "a", score: 200},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := e.in(t)
			p := utiltesting.MakePlacement(strings.ReplaceAll(name, " ", "-"), e.ns).NumberOfClusters(1).
				Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn(tc.prioritizer, tc.weight)
			e.createPlacement(p)
			e.waitDecided(p.Name, e.names(tc.want)...)
			e.waitScores(p.Name, map[string]int64{e.set + "-" + tc.want: tc.score})
		})
	}
}

// TestAddOnPrioritizer: an AddOn prioritizer ranks clusters by the named score of the named
// AddOnPlacementScore in each cluster's namespace; a score whose validUntil has passed is
// ignored (the cluster scores 0), and a changed score reschedules the placement.
func TestAddOnPrioritizer(t *testing.T) {
	e := newEnv(t, "prio-addon")
	for _, s := range []string{"a", "b", "c", "d"} {
		e.createCluster(e.cluster(s))
	}
	e.createScore(utiltesting.MakeScore(e.set+"-a", "demo", nil, map[string]int32{"cpu": 30}))
	e.createScore(utiltesting.MakeScore(e.set+"-b", "demo", nil, map[string]int32{"cpu": 80, "mem": 5}))
	e.createScore(utiltesting.MakeScore(e.set+"-c", "demo", ptrTo(time.Now().Add(time.Hour)), map[string]int32{"cpu": 50}))
	// The best score, but stale.
	e.createScore(utiltesting.MakeScore(e.set+"-d", "demo", ptrTo(time.Now().Add(-time.Hour)), map[string]int32{"cpu": 95}))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("one", e.ns).NumberOfClusters(1).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "cpu", 1))
	e.createPlacement(utiltesting.MakePlacement("two", e.ns).NumberOfClusters(2).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "cpu", 1).SortBy(clusterv1beta1.PlacementSortByScore))
	e.waitDecided("one", e.names("b")...)
	e.waitDecided("two", e.names("b", "c")...)
	e.waitScores("two", map[string]int64{e.set + "-b": 80, e.set + "-c": 50})

	scores := e.clusters.ClusterV1alpha1().AddOnPlacementScores(e.set + "-b")
	updateWithRetry(t, func(ctx context.Context) (any, error) {
		s, err := scores.Get(ctx, "demo", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		for i := range s.Status.Scores {
			if s.Status.Scores[i].Name == "cpu" {
				s.Status.Scores[i].Value = 10
			}
		}
		return scores.UpdateStatus(ctx, s, metav1.UpdateOptions{})
	})
	e.waitDecided("one", e.names("c")...)
}

// TestUnknownBuiltInPrioritizer: a builtIn prioritizer that does not exist makes the
// placement Misconfigured with OCM's message.
func TestUnknownBuiltInPrioritizer(t *testing.T) {
	e := newEnv(t, "prio-unknown")
	e.createCluster(e.cluster("a"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns).BuiltIn("NoSuchPrioritizer", 1))
	p := e.waitCondition("p", clusterv1beta1.PlacementConditionMisconfigured, metav1.ConditionTrue, "Misconfigured")
	if c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured); !strings.Contains(c.Message, "incorrect builtin prioritizer") {
		t.Errorf("Misconfigured message %q, want it to contain %q", c.Message, "incorrect builtin prioritizer")
	}
	if got, _, err := e.decided(t.Context(), "p"); err != nil || len(got) != 0 {
		t.Errorf("decided %v (err %v), want nothing", got, err)
	}
}
