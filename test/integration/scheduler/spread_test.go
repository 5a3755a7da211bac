package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestSpreadConstraints: add-on scores prefer the east clusters, and a DoNotSchedule spread
// over the region label with maxSkew 1 still takes two from each region; a claim topology
// works the same way.
func TestSpreadConstraints(t *testing.T) {
	e := newEnv(t, "spread")
	for i, s := range []string{"e1", "e2", "e3", "w1", "w2", "w3"} {
		region, zone := "east", "z1"
		if s[0] == 'w' {
			region, zone = "west", "z2"
		}
		e.createCluster(e.cluster(s).Label("region", region).Claim("zone.example.com", zone))
		score := int32(90 - i*10) // east 90..70, west 60..40
		e.createScore(utiltesting.MakeScore(e.names(s)[0], "usage", nil, map[string]int32{"free": score}))
	}
	e.startHub()

	byScore := utiltesting.MakePlacement("by-score", e.ns).NumberOfClusters(4).Mode(clusterv1beta1.PrioritizerPolicyModeExact).
		AddOn("usage", "free", 1)
	e.createPlacement(byScore.Clone())
	e.waitDecided("by-score", e.names("e1", "e2", "e3", "w1")...)

	e.createPlacement(byScore.Clone().Named("by-label").Spread("region", clusterv1beta1.TopologyKeyTypeLabel, 1, clusterv1beta1.DoNotSchedule))
	e.waitDecided("by-label", e.names("e1", "e2", "w1", "w2")...)

	e.createPlacement(byScore.Clone().Named("by-claim").Spread("zone.example.com", clusterv1beta1.TopologyKeyTypeClaim, 1, clusterv1beta1.DoNotSchedule))
	e.waitDecided("by-claim", e.names("e1", "e2", "w1", "w2")...)
}

// TestScoreRateLimit: a score change that does not change the selected clusters reaches
// ClusterDecision.score at most once per scoreRateLimit, while a change of the selection is
// written at once.
func TestScoreRateLimit(t *testing.T) {
	e := newEnv(t, "ratelimit")
	for i, s := range []string{"a", "b", "c"} {
		e.createCluster(e.cluster(s))
		e.createScore(utiltesting.MakeScore(e.names(s)[0], "usage", nil, map[string]int32{"free": int32(90 - i*30)}))
	}
	e.startHub()
	p := utiltesting.MakePlacement("p", e.ns).NumberOfClusters(2).Mode(clusterv1beta1.PrioritizerPolicyModeExact).
		AddOn("usage", "free", 1).SortBy(clusterv1beta1.PlacementSortByScore)
	p.Spec.ScoreRateLimit = "8s"
	e.createPlacement(p)
	e.waitScores("p", map[string]int64{e.names("a")[0]: 90, e.names("b")[0]: 60})

	// The first score-only change right after the decision is held back.
	setScore := func(cluster string, v int32) {
		t.Helper()
		name := e.names(cluster)[0]
		updateWithRetry(t, func(ctx context.Context) (*clusterv1beta1.PlacementDecision, error) {
			s, err := e.clusters.ClusterV1alpha1().AddOnPlacementScores(name).Get(ctx, "usage", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			s.Status.Scores[0].Value = v
			_, err = e.clusters.ClusterV1alpha1().AddOnPlacementScores(name).UpdateStatus(ctx, s, metav1.UpdateOptions{})
			return nil, err
		})
	}
	start := time.Now()
	setScore("a", 80)
	framework.Consistently(t, 3*time.Second, func(ctx context.Context) error {
		_, objs, err := e.decided(ctx, "p")
		if err != nil {
			return err
		}
		for _, cd := range objs[0].Status.Decisions {
			if cd.ClusterName == e.names("a")[0] && cd.Score != 90 {
				return fmt.Errorf("score of a changed to %d after %s, before scoreRateLimit", cd.Score, time.Since(start).Round(time.Millisecond))
			}
		}
		return nil
	})
	// ... and written once the limit has passed, without any other event.
	e.waitScores("p", map[string]int64{e.names("a")[0]: 80, e.names("b")[0]: 60})

	// A change of the selection is not held back.
	setScore("c", 95)
	e.waitScores("p", map[string]int64{e.names("c")[0]: 95, e.names("a")[0]: 80})
	_, objs, err := e.decided(t.Context(), "p")
	if err != nil {
		t.Fatal(err)
	}
	if got := decisionClusterNames(objs[0].Status.Decisions); !slices.Equal(got, e.names("c", "a")) {
		t.Errorf("sortBy Score order %v, want c then a", got)
	}
}
