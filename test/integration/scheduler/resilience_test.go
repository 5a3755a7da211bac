package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// quietPeriod is how long tests that assert that nothing is written watch for writes, after a
// barrier has shown that the hub processed the change that must not cause any.
const quietPeriod = 3 * time.Second

// TestDecisionCreateEvent: creating a PlacementDecision is recorded as OCM records it, in an
// events.k8s.io/v1 Event in the placement's namespace about the Placement.
func TestDecisionCreateEvent(t *testing.T) {
	e := newEnv(t, "events")
	e.createCluster(e.cluster("a"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns))
	e.waitDecided("p", e.names("a")...)
	framework.Eventually(t, func(ctx context.Context) error {
		evs, err := e.events(ctx, "p", "DecisionCreate")
		if err != nil {
			return err
		}
		if len(evs) != 1 {
			return fmt.Errorf("%d DecisionCreate events, want 1", len(evs))
		}
		ev := evs[0]
		if ev.Type != corev1.EventTypeNormal || ev.Action != "DecisionCreated" || ev.Regarding.Namespace != e.ns ||
			ev.Related == nil || ev.Related.Kind != "PlacementDecision" || ev.Related.Name != "p-decision-1" {
			return fmt.Errorf("event %+v: want a Normal DecisionCreated event related to p-decision-1", ev)
		}
		return nil
	})
}

// TestDecisionUpdateEvent: a new decision object's first list is part of its creation and
// records no DecisionUpdate event (a backlog of new placements would write two events each);
// a later change of its list records one.
func TestDecisionUpdateEvent(t *testing.T) {
	e := newEnv(t, "update-events")
	e.createCluster(e.cluster("a"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns))
	e.waitDecided("p", e.names("a")...)
	count := func(ctx context.Context, reason string) (int, error) {
		evs, err := e.events(ctx, "p", reason)
		return len(evs), err
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if n, err := count(ctx, "DecisionCreate"); err != nil || n != 1 {
			return fmt.Errorf("%d DecisionCreate events (%v), want 1", n, err)
		}
		return nil
	})
	// Both events of a creation would be recorded by the same cycle, the DecisionCreate first.
	if n, err := count(t.Context(), "DecisionUpdate"); err != nil || n != 0 {
		t.Fatalf("%d DecisionUpdate events (%v) for a new decision, want 0", n, err)
	}

	e.createCluster(e.cluster("b"))
	e.waitDecided("p", e.names("a", "b")...)
	framework.Eventually(t, func(ctx context.Context) error {
		if n, err := count(ctx, "DecisionUpdate"); err != nil || n != 1 {
			return fmt.Errorf("%d DecisionUpdate events (%v) after the list changed, want 1", n, err)
		}
		return nil
	})
}

// placementVersions returns the resourceVersions of the placement and of its decisions.
func (e *env) placementVersions(ctx context.Context, placement string) (map[string]string, error) {
	p, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, placement, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{"placement/" + placement: p.ResourceVersion}
	_, objs, err := e.decided(ctx, placement)
	if err != nil {
		return nil, err
	}
	for _, d := range objs {
		out["decision/"+d.Name] = d.ResourceVersion
	}
	return out, nil
}

// assertNoWrites checks for quietPeriod that the placement and its decisions keep the
// resourceVersions they have now.
func (e *env) assertNoWrites(placement string, before map[string]string) {
	e.t.Helper()
	framework.Consistently(e.t, quietPeriod, func(ctx context.Context) error {
		now, err := e.placementVersions(ctx, placement)
		if err != nil {
			return err
		}
		for k, rv := range before {
			if now[k] != rv {
				return fmt.Errorf("%s was written (resourceVersion %s, then %s) though nothing it depends on changed", k, rv, now[k])
			}
		}
		if len(now) != len(before) {
			return fmt.Errorf("objects changed: %v, then %v", before, now)
		}
		return nil
	})
}

// TestNoWritesWithoutChange: once a placement is scheduled, changes that cannot change its
// result — agent heartbeats in the clusters' status conditions, labels of clusters outside its
// cluster sets or outside its predicates — write neither its decisions nor its status.
func TestNoWritesWithoutChange(t *testing.T) {
	e := newEnv(t, "writes")
	e.createCluster(e.cluster("a").Label("app", "web"))
	e.createCluster(e.cluster("b").Label("app", "web"))
	e.createCluster(e.cluster("c"))
	outside := utiltesting.MakeCluster(e.set + "-outside")
	e.createCluster(outside)
	for _, name := range e.names("a", "b", "c") {
		e.updateClusterStatus(name, func(s *clusterv1.ManagedClusterStatus) {
			s.Conditions = utiltesting.MakeCluster(name).Available().Status.Conditions
		})
	}
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns).PredicateLabels(map[string]string{"app": "web"}))
	e.createPlacement(utiltesting.MakePlacement("witness", e.ns).PredicateLabels(map[string]string{"app": "witness"}))
	e.waitDecided("p", e.names("a", "b")...)
	e.waitCondition("p", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
	// A cycle that sees the first decisions records Steady's score too (Balance 100 +
	// Steady 100); after it, a cycle computes exactly what is recorded.
	e.resync("p")
	e.waitScores("p", map[string]int64{e.set + "-a": 200, e.set + "-b": 200})
	before, err := e.placementVersions(t.Context(), "p")
	if err != nil {
		t.Fatal(err)
	}

	for range 3 {
		for _, name := range e.names("a", "c") {
			e.updateClusterStatus(name, func(s *clusterv1.ManagedClusterStatus) {
				s.Conditions[0].Message = fmt.Sprintf("heartbeat at %s", time.Now().Format(time.RFC3339Nano))
				s.Conditions[0].LastTransitionTime = metav1.Now()
			})
		}
	}
	e.updateCluster(outside.Name, func(cl *clusterv1.ManagedCluster) { cl.Labels["app"] = "web" })
	e.updateCluster(e.set+"-c", func(cl *clusterv1.ManagedCluster) { cl.Labels["tier"] = "batch" })
	// Created last: once "witness" decides it, the hub has handled every change above.
	e.createCluster(e.cluster("w").Label("app", "witness"))
	e.waitDecided("witness", e.names("w")...)
	e.assertNoWrites("p", before)
}

// TestDecisionsRepaired: the hub owns the PlacementDecisions it writes: one that is deleted is
// created again, and one that someone else changes is written back.
func TestDecisionsRepaired(t *testing.T) {
	e := newEnv(t, "repair")
	e.createCluster(e.cluster("a"))
	e.createCluster(e.cluster("b"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns))
	e.waitDecided("p", e.names("a", "b")...)

	decisions := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns)
	if err := decisions.Delete(t.Context(), "p-decision-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitDecided("p", e.names("a", "b")...)

	updateWithRetry(t, func(ctx context.Context) (*clusterv1beta1.PlacementDecision, error) {
		d, err := decisions.Get(ctx, "p-decision-1", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		d.Status.Decisions = []clusterv1beta1.ClusterDecision{{ClusterName: e.set + "-b"}}
		return decisions.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	})
	e.waitDecided("p", e.names("a", "b")...)
}

// TestHubRestartWritesNothing: a new hub (a restart, or a new leader) schedules every
// placement again and finds nothing to write.
func TestHubRestartWritesNothing(t *testing.T) {
	e := newEnv(t, "restart")
	e.createCluster(e.cluster("a").Label("app", "web"))
	e.createCluster(e.cluster("b").Label("app", "web"))
	stop := e.startStoppableHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns).PredicateLabels(map[string]string{"app": "web"}))
	e.waitDecided("p", e.names("a", "b")...)
	e.resync("p")
	e.waitScores("p", map[string]int64{e.set + "-a": 200, e.set + "-b": 200})
	before, err := e.placementVersions(t.Context(), "p")
	if err != nil {
		t.Fatal(err)
	}
	stop()

	e.startHub()
	e.createCluster(e.cluster("w").Label("app", "witness"))
	e.createPlacement(utiltesting.MakePlacement("witness", e.ns).PredicateLabels(map[string]string{"app": "witness"}))
	e.waitDecided("witness", e.names("w")...)
	e.assertNoWrites("p", before)
}
