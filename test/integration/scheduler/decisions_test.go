package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// decisionState is what a consumer of a placement's decisions sees at one resourceVersion:
// the clusters of each PlacementDecision by name.
type decisionState map[string][]string

func (s decisionState) union() sets.Set[string] {
	out := sets.New[string]()
	for _, cls := range s {
		out.Insert(cls...)
	}
	return out
}

// decisionWatch follows a placement's PlacementDecisions through one watch, so that every
// state the API server went through is seen, not only the ones a poll happens to catch.
type decisionWatch struct {
	t      *testing.T
	w      watch.Interface
	state  decisionState
	events int
}

// watchDecisions lists the placement's decisions and watches them from that list on.
func (e *env) watchDecisions(placement string) *decisionWatch {
	e.t.Helper()
	ctx := e.t.Context()
	sel := labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: placement}).String()
	client := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns)
	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		e.t.Fatal(err)
	}
	w, err := client.Watch(ctx, metav1.ListOptions{LabelSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(w.Stop)
	dw := &decisionWatch{t: e.t, w: w, state: decisionState{}}
	for _, d := range list.Items {
		dw.state[d.Name] = decisionClusterNames(d.Status.Decisions)
	}
	return dw
}

// follow applies watch events until done accepts the state, calling check on every state
// on the way (including the first), and fails the test when check fails or done is not reached
// within EventuallyTimeout.
func (dw *decisionWatch) follow(check, done func(decisionState) error) {
	dw.t.Helper()
	if err := check(dw.state); err != nil {
		dw.t.Fatalf("before any event: %v", err)
	}
	timeout := dw.t.Context()
	timeout, cancel := context.WithTimeout(timeout, framework.EventuallyTimeout)
	defer cancel()
	for {
		last := done(dw.state)
		if last == nil {
			return
		}
		select {
		case <-timeout.Done():
			dw.t.Fatalf("after %d events: %v", dw.events, last)
		case ev, ok := <-dw.w.ResultChan():
			if !ok {
				dw.t.Fatalf("the watch ended after %d events: %v", dw.events, last)
			}
			d, isDecision := ev.Object.(*clusterv1beta1.PlacementDecision)
			if !isDecision {
				if ev.Type == watch.Error {
					dw.t.Fatalf("watch error: %v", ev.Object)
				}
				continue
			}
			dw.events++
			if ev.Type == watch.Deleted {
				delete(dw.state, d.Name)
			} else {
				dw.state[d.Name] = decisionClusterNames(d.Status.Decisions)
			}
			if err := check(dw.state); err != nil {
				dw.t.Fatalf("event %d (%s %s): %v", dw.events, ev.Type, d.Name, err)
			}
		}
	}
}

// containsAll fails when one of the clusters is in no decision.
func containsAll(clusters sets.Set[string]) func(decisionState) error {
	return func(s decisionState) error {
		if missing := clusters.Difference(s.union()); missing.Len() > 0 {
			return fmt.Errorf("%d still selected clusters are in no PlacementDecision, e.g. %v", missing.Len(), sets.List(missing)[:min(5, missing.Len())])
		}
		return nil
	}
}

// laidOut accepts exactly these objects, none over 100 clusters, holding exactly these
// clusters, each once.
func laidOut(objects []string, clusters sets.Set[string]) func(decisionState) error {
	return func(s decisionState) error {
		if got := slices.Sorted(maps.Keys(s)); !slices.Equal(got, objects) {
			return fmt.Errorf("decision objects %v, want %v", got, objects)
		}
		seen := sets.New[string]()
		for name, cls := range s {
			if len(cls) > 100 {
				return fmt.Errorf("%s holds %d clusters", name, len(cls))
			}
			for _, c := range cls {
				if seen.Has(c) {
					return fmt.Errorf("cluster %s is in two decisions", c)
				}
				seen.Insert(c)
			}
		}
		if !seen.Equal(clusters) {
			return fmt.Errorf("decisions hold %d clusters; missing %d, extra %v", seen.Len(), clusters.Difference(seen).Len(), sets.List(seen.Difference(clusters)))
		}
		return nil
	}
}

// TestManyClustersDecisions: over 100 clusters are split into PlacementDecisions of at most
// 100 named <placement>-decision-<n>, one decision group listing them all. While clusters come
// and go, a consumer watching the decisions never sees a cluster that stays selected missing
// from all of them (fleetfit's guarantee; OCM shifts clusters between objects in separate
// writes): neither when a cluster sorting first is added, nor when removals empty the last
// object and its clusters move.
func TestManyClustersDecisions(t *testing.T) {
	e := newEnv(t, "decisions-many")
	const n = 230
	var ws []*utiltesting.ClusterWrapper
	all := sets.New[string]()
	for i := 1; i <= n; i++ {
		w := e.cluster(fmt.Sprintf("c%03d", i))
		ws = append(ws, w)
		all.Insert(w.Name)
	}
	e.createClusters(ws)
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("many", e.ns))
	names := []string{"many-decision-1", "many-decision-2", "many-decision-3"}
	framework.Eventually(t, func(ctx context.Context) error {
		_, objs, err := e.decided(ctx, "many")
		if err != nil {
			return err
		}
		s := decisionState{}
		for _, d := range objs {
			s[d.Name] = decisionClusterNames(d.Status.Decisions)
		}
		return laidOut(names, all)(s)
	})
	e.waitGroups("many", n, []clusterv1beta1.DecisionGroupStatus{{Decisions: names, ClustersCount: n}})

	// A cluster that sorts before all others.
	dw := e.watchDecisions("many")
	first := e.set + "-a000"
	e.createCluster(utiltesting.MakeCluster(first).ClusterSet(e.set))
	dw.follow(containsAll(all), laidOut(names, all.Clone().Insert(first)))
	t.Logf("Adding %s: %d decision writes seen", first, dw.events)
	all.Insert(first)

	// Remove the first 50 of decision-1: 181 clusters fit in two objects, so the clusters
	// of the third must move.
	var gone []string
	for _, c := range slices.Sorted(maps.Keys(all)) {
		if c != first && len(gone) < 50 {
			gone = append(gone, c)
		}
	}
	remaining := all.Clone().Delete(gone...)
	if err := forEachConcurrently(gone, 8, func(name string) error {
		return e.clusters.ClusterV1().ManagedClusters().Delete(t.Context(), name, metav1.DeleteOptions{})
	}); err != nil {
		t.Fatal(err)
	}
	seen := dw.events
	dw.follow(containsAll(remaining), laidOut(names[:2], remaining))
	t.Logf("Removing %d clusters: %d decision writes seen", len(gone), dw.events-seen)
	e.waitCondition("many", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
	e.waitGroups("many", remaining.Len(), []clusterv1beta1.DecisionGroupStatus{{Decisions: names[:2], ClustersCount: int32(remaining.Len())}})
}

// waitGroups waits until the placement's status counts the selected clusters and lists the
// decision groups.
func (e *env) waitGroups(placement string, selected int, want []clusterv1beta1.DecisionGroupStatus) {
	e.t.Helper()
	framework.Eventually(e.t, func(ctx context.Context) error {
		p, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, placement, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Status.NumberOfSelectedClusters != int32(selected) {
			return fmt.Errorf("status.numberOfSelectedClusters is %d, want %d", p.Status.NumberOfSelectedClusters, selected)
		}
		if diff := cmp.Diff(want, p.Status.DecisionGroups); diff != "" {
			return fmt.Errorf("status.decisionGroups (-want,+got):\n%s", diff)
		}
		return nil
	})
}

// decisionLayout is one PlacementDecision as the tests compare it: name, group labels and
// clusters in order.
type decisionLayout struct {
	Name       string
	GroupIndex string
	GroupName  string
	Clusters   []string
}

func (e *env) waitLayout(placement string, want []decisionLayout, wantGroups []clusterv1beta1.DecisionGroupStatus) {
	e.t.Helper()
	framework.Eventually(e.t, func(ctx context.Context) error {
		_, objs, err := e.decided(ctx, placement)
		if err != nil {
			return err
		}
		var got []decisionLayout
		for _, d := range objs {
			got = append(got, decisionLayout{
				Name:       d.Name,
				GroupIndex: d.Labels[clusterv1beta1.DecisionGroupIndexLabel],
				GroupName:  d.Labels[clusterv1beta1.DecisionGroupNameLabel],
				Clusters:   decisionClusterNames(d.Status.Decisions),
			})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("decisions (-want,+got):\n%s", diff)
		}
		p, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, placement, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if diff := cmp.Diff(wantGroups, p.Status.DecisionGroups); diff != "" {
			return fmt.Errorf("status.decisionGroups (-want,+got):\n%s", diff)
		}
		return nil
	})
}

// TestDecisionGroupsByPercentage: clustersPerDecisionGroup "25%" of 7 selected clusters makes
// groups of 2 (rounded up), in cluster name order, each in its own PlacementDecision labelled
// with the group's index and an empty name, and listed in status.decisionGroups.
func TestDecisionGroupsByPercentage(t *testing.T) {
	e := newEnv(t, "decisions-percent")
	for _, s := range []string{"a", "b", "c", "d", "e", "f", "g"} {
		e.createCluster(e.cluster(s))
	}
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns).ClustersPerDecisionGroup(intstr.FromString("25%")))
	e.waitLayout("p", []decisionLayout{
		{Name: "p-decision-1", GroupIndex: "0", Clusters: e.names("a", "b")},
		{Name: "p-decision-2", GroupIndex: "1", Clusters: e.names("c", "d")},
		{Name: "p-decision-3", GroupIndex: "2", Clusters: e.names("e", "f")},
		{Name: "p-decision-4", GroupIndex: "3", Clusters: e.names("g")},
	}, []clusterv1beta1.DecisionGroupStatus{
		{DecisionGroupIndex: 0, Decisions: []string{"p-decision-1"}, ClustersCount: 2},
		{DecisionGroupIndex: 1, Decisions: []string{"p-decision-2"}, ClustersCount: 2},
		{DecisionGroupIndex: 2, Decisions: []string{"p-decision-3"}, ClustersCount: 2},
		{DecisionGroupIndex: 3, Decisions: []string{"p-decision-4"}, ClustersCount: 1},
	})

	// One cluster fewer: 25% of 6 is still 2 per group, so the last group goes away.
	if err := e.clusters.ClusterV1().ManagedClusters().Delete(t.Context(), e.set+"-g", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitLayout("p", []decisionLayout{
		{Name: "p-decision-1", GroupIndex: "0", Clusters: e.names("a", "b")},
		{Name: "p-decision-2", GroupIndex: "1", Clusters: e.names("c", "d")},
		{Name: "p-decision-3", GroupIndex: "2", Clusters: e.names("e", "f")},
	}, []clusterv1beta1.DecisionGroupStatus{
		{DecisionGroupIndex: 0, Decisions: []string{"p-decision-1"}, ClustersCount: 2},
		{DecisionGroupIndex: 1, Decisions: []string{"p-decision-2"}, ClustersCount: 2},
		{DecisionGroupIndex: 2, Decisions: []string{"p-decision-3"}, ClustersCount: 2},
	})
}

// TestPredefinedDecisionGroups: clusters matching a predefined decision group come first, in
// groups named after it; the other clusters follow in unnamed groups; both are cut to
// clustersPerDecisionGroup.
func TestPredefinedDecisionGroups(t *testing.T) {
	e := newEnv(t, "decisions-groups")
	for _, s := range []string{"a", "c", "e"} {
		e.createCluster(e.cluster(s))
	}
	for _, s := range []string{"b", "d"} {
		e.createCluster(e.cluster(s).Label("canary", "true"))
	}
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns).
		DecisionGroup("canary", map[string]string{"canary": "true"}).
		ClustersPerDecisionGroup(intstr.FromInt32(2)))
	e.waitLayout("p", []decisionLayout{
		{Name: "p-decision-1", GroupIndex: "0", GroupName: "canary", Clusters: e.names("b", "d")},
		{Name: "p-decision-2", GroupIndex: "1", Clusters: e.names("a", "c")},
		{Name: "p-decision-3", GroupIndex: "2", Clusters: e.names("e")},
	}, []clusterv1beta1.DecisionGroupStatus{
		{DecisionGroupIndex: 0, DecisionGroupName: "canary", Decisions: []string{"p-decision-1"}, ClustersCount: 2},
		{DecisionGroupIndex: 1, Decisions: []string{"p-decision-2"}, ClustersCount: 2},
		{DecisionGroupIndex: 2, Decisions: []string{"p-decision-3"}, ClustersCount: 1},
	})

	// Without clustersPerDecisionGroup each group is one decision.
	e.createPlacement(utiltesting.MakePlacement("q", e.ns).DecisionGroup("canary", map[string]string{"canary": "true"}))
	e.waitLayout("q", []decisionLayout{
		{Name: "q-decision-1", GroupIndex: "0", GroupName: "canary", Clusters: e.names("b", "d")},
		{Name: "q-decision-2", GroupIndex: "1", Clusters: e.names("a", "c", "e")},
	}, []clusterv1beta1.DecisionGroupStatus{
		{DecisionGroupIndex: 0, DecisionGroupName: "canary", Decisions: []string{"q-decision-1"}, ClustersCount: 2},
		{DecisionGroupIndex: 1, Decisions: []string{"q-decision-2"}, ClustersCount: 3},
	})
}

// TestSortByScore: sortBy Score orders each decision's clusters by score, highest first
// (sortBy ClusterName, the default, by name), and every ClusterDecision carries its score.
func TestSortByScore(t *testing.T) {
	e := newEnv(t, "decisions-sortby")
	e.createCluster(e.cluster("a").Resource(clusterv1.ResourceCPU, "2", "2"))
	e.createCluster(e.cluster("b").Resource(clusterv1.ResourceCPU, "8", "8"))
	e.createCluster(e.cluster("c").Resource(clusterv1.ResourceCPU, "4", "4"))
	e.startHub()

	// Min-max normalised: 2 → -100, 8 → 100, 4 → int64((2/6 - 0.5) * 200) = -33.
	scores := map[string]int64{e.set + "-a": -100, e.set + "-b": 100, e.set + "-c": -33}
	byCPU := utiltesting.MakePlacement("by-score", e.ns).Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("ResourceAllocatableCPU", 1)
	e.createPlacement(byCPU.Clone().SortBy(clusterv1beta1.PlacementSortByScore))
	byName := byCPU.Clone()
	byName.Name = "by-name"
	e.createPlacement(byName)

	e.waitDecided("by-score", e.names("b", "c", "a")...)
	e.waitScores("by-score", scores)
	e.waitDecided("by-name", e.names("a", "b", "c")...)
	e.waitScores("by-name", scores)
}
