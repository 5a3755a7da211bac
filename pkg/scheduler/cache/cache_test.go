package cache_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func decision(ns, name, placement string, clusters ...string) *clusterv1beta1.PlacementDecision {
	d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns, Name: name, Labels: map[string]string{clusterv1beta1.PlacementLabel: placement},
	}}
	for _, c := range clusters {
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c})
	}
	return d
}

func TestSnapshotIsRebuiltOnlyOnChange(t *testing.T) {
	c := cache.New()
	c.UpsertCluster(utiltesting.MakeCluster("b").Obj())
	c.UpsertCluster(utiltesting.MakeCluster("a").Obj())
	c.UpsertSet(utiltesting.MakeExclusiveClusterSet("default"))
	c.UpsertBinding(utiltesting.MakeClusterSetBinding("ns", "default"))

	s1 := c.Snapshot()
	if s2 := c.Snapshot(); s2 != s1 {
		t.Fatal("snapshot rebuilt without a change")
	}
	if got := []string{s1.Cluster(0).Name(), s1.Cluster(1).Name()}; !cmp.Equal(got, []string{"a", "b"}) {
		t.Errorf("clusters %v, want name order", got)
	}
	if members, ok := s1.ClusterSet("default"); !ok || members.Count() != 2 {
		t.Errorf("set default has %d members, want 2", members.Count())
	}
	if got := s1.BindingNames("ns"); !cmp.Equal(got, []string{"default"}) {
		t.Errorf("bindings %v", got)
	}

	c.UpsertScore(utiltesting.MakeScore("a", "res", nil, map[string]int32{"cpu": 3}))
	s3 := c.Snapshot()
	if s3 == s1 {
		t.Fatal("score change did not rebuild the snapshot")
	}
	if s1.Cluster(0).Scores["res"] != nil {
		t.Error("an older snapshot sees a newer score: scores must be copy-on-write")
	}
	if s3.Cluster(0).Scores["res"] == nil {
		t.Error("new snapshot misses the score")
	}
	if s3.Cluster(1) != s1.Cluster(1) {
		t.Error("an unchanged cluster's info was rebuilt")
	}
}

func TestDecisionsAreCounted(t *testing.T) {
	c := cache.New()
	for _, n := range []string{"a", "b", "c"} {
		c.UpsertCluster(utiltesting.MakeCluster(n).Obj())
	}
	c.UpsertDecision(decision("ns", "p-decision-1", "p", "a", "b"))
	c.UpsertDecision(decision("ns", "p-decision-2", "p", "c"))
	c.UpsertDecision(decision("ns", "q-decision-1", "q", "a"))
	c.UpsertDecision(decision("other", "x", "")) // not a placement's decision: ignored

	s := c.Snapshot()
	counts := []int32{s.DecisionCount(0), s.DecisionCount(1), s.DecisionCount(2)}
	if diff := cmp.Diff([]int32{2, 1, 1}, counts); diff != "" {
		t.Errorf("decision counts (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, s.DecidedNames("ns/p")); diff != "" {
		t.Errorf("decided by ns/p (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff(sets.New("ns/p", "ns/q"), c.DecidedBy("a")); diff != "" {
		t.Errorf("DecidedBy(a) (-want,+got):\n%s", diff)
	}

	c.UpsertDecision(decision("ns", "p-decision-1", "p", "b"))
	c.DeleteDecision("ns", "q-decision-1")
	s = c.Snapshot()
	counts = []int32{s.DecisionCount(0), s.DecisionCount(1), s.DecisionCount(2)}
	if diff := cmp.Diff([]int32{0, 1, 1}, counts); diff != "" {
		t.Errorf("after updates, decision counts (-want,+got):\n%s", diff)
	}
	if got := c.DecidedBy("a"); got.Len() != 0 {
		t.Errorf("DecidedBy(a) = %v after a left every decision", got)
	}
}

func TestReservations(t *testing.T) {
	c := cache.New()
	c.UpsertCluster(utiltesting.MakeCluster("a").Obj())
	now := time.Now()
	c.Reserve("a", "ns/p", []framework.Reservation{{Placement: "ns/p", Replicas: 1, Until: now.Add(time.Minute)}}, now)
	c.Reserve("a", "ns/q", []framework.Reservation{{Placement: "ns/q", Replicas: 2, Until: now.Add(time.Minute)}}, now)
	if got := len(c.Snapshot().Cluster(0).Reservations); got != 2 {
		t.Fatalf("%d reservations, want 2", got)
	}
	c.Unreserve("a", "ns/p")
	rs := c.Snapshot().Cluster(0).Reservations
	if len(rs) != 1 || rs[0].Placement != "ns/q" {
		t.Errorf("after Unreserve: %+v, want only ns/q's", rs)
	}
	// An expired reservation is dropped by the next Reserve on the cluster.
	c.Reserve("a", "ns/r", nil, now.Add(2*time.Minute))
	if rs := c.Snapshot().Cluster(0).Reservations; len(rs) != 0 {
		t.Errorf("expired reservations kept: %+v", rs)
	}
}

func TestOnlyTheClusterNamedInventoryCounts(t *testing.T) {
	c := cache.New()
	c.UpsertCluster(utiltesting.MakeCluster("a").Obj())
	agent := &fleetfitv1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "a"}}
	agent.Status.Revision = 1
	stray := &fleetfitv1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "stray"}}
	stray.Status.Revision = 99

	if !c.UpsertInventory(agent) {
		t.Fatal("the cluster's own inventory was ignored")
	}
	if c.UpsertInventory(stray) {
		t.Error("a second ClusterInventory in the cluster namespace was accepted")
	}
	if got := c.Snapshot().Cluster(0).Inventory; got != agent {
		t.Errorf("snapshot holds inventory %s/%s, want the agent's a/a", got.Namespace, got.Name)
	}
	c.DeleteInventory(stray)
	if got := c.Snapshot().Cluster(0).Inventory; got != agent {
		t.Errorf("deleting the stray inventory removed the agent's: snapshot holds %v", got)
	}
	c.DeleteInventory(agent)
	if got := c.Snapshot().Cluster(0).Inventory; got != nil {
		t.Errorf("deleting the agent's inventory left %s/%s", got.Namespace, got.Name)
	}
}

func TestInventoryStaleAfterReachesTheSnapshot(t *testing.T) {
	c := cache.New()
	c.UpsertCluster(utiltesting.MakeCluster("a").Obj())
	inv := &fleetfitv1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "a"}}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	inv.Status.ObservedAt = metav1.NewTime(now.Add(-time.Minute))
	c.UpsertInventory(inv)
	if info := c.Snapshot().Cluster(0); !info.InventoryFresh(now) || info.InventoryStale(now) {
		t.Fatalf("a minute-old inventory is not fresh with the default threshold %s", framework.InventoryStaleAfter)
	}
	c.SetInventoryStaleAfter(30 * time.Second)
	if info := c.Snapshot().Cluster(0); info.InventoryFresh(now) || !info.InventoryStale(now) {
		t.Error("a minute-old inventory is fresh with a 30s threshold")
	}
}

// TestAssumedDecisions: what a cycle decided counts in the next snapshots before the informer
// shows its PlacementDecisions, and until it does or the assumption is forgotten.
func TestAssumedDecisions(t *testing.T) {
	c := cache.New()
	for _, n := range []string{"a", "b", "c"} {
		c.UpsertCluster(utiltesting.MakeCluster(n).Obj())
	}
	c.UpsertDecision(decision("ns", "p-decision-1", "p", "a"))
	counts := func() []int32 {
		s := c.Snapshot()
		return []int32{s.DecisionCount(0), s.DecisionCount(1), s.DecisionCount(2)}
	}
	epoch := c.ReservationEpoch()
	if !c.Assume("ns/p", []string{"c", "b"}) {
		t.Fatal("Assume of new clusters reported no change")
	}
	if c.ReservationEpoch() == epoch {
		t.Error("Assume did not change the epoch: a cycle computed before it could reserve on a stale view")
	}
	if diff := cmp.Diff([]int32{0, 1, 1}, counts()); diff != "" {
		t.Errorf("assumed counts (-want,+got):\n%s", diff)
	}
	if c.Assume("ns/p", []string{"b", "c"}) {
		t.Error("assuming the same clusters again reported a change")
	}
	// The informer catches up in two steps; the assumption holds until it shows them all.
	c.UpsertDecision(decision("ns", "p-decision-1", "p", "b"))
	if diff := cmp.Diff([]int32{0, 1, 1}, counts()); diff != "" {
		t.Errorf("half-written counts (-want,+got):\n%s", diff)
	}
	c.UpsertDecision(decision("ns", "p-decision-2", "p", "c"))
	// Confirmed: from now on the informer's view counts, also when it changes again.
	c.DeleteDecision("ns", "p-decision-2")
	if diff := cmp.Diff([]int32{0, 1, 0}, counts()); diff != "" {
		t.Errorf("after the assumption was confirmed (-want,+got):\n%s", diff)
	}

	c.Assume("ns/q", []string{"a"})
	c.Forget("ns/q")
	if diff := cmp.Diff([]int32{0, 1, 0}, counts()); diff != "" {
		t.Errorf("after Forget (-want,+got):\n%s", diff)
	}
}

// TestReportWithoutThePodsKeepsTheEpoch: a report of a cluster that shows none of its reserved
// pods (a heartbeat) leaves the reservation epoch as it is, so that a cycle under way is not
// computed again for it; one that shows them drops the reservation and changes the epoch.
func TestReportWithoutThePodsKeepsTheEpoch(t *testing.T) {
	c := cache.New()
	c.UpsertCluster(utiltesting.MakeCluster("a").Obj())
	now := time.Now()
	node := utiltesting.MakeNode("n").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").Obj()
	c.UpsertInventory(utiltesting.MakeInventory("a", now, []*corev1.Node{node}))
	base := framework.RequestedTotals(c.Inventory("a"))
	c.Reserve("a", "ns/p", []framework.Reservation{{Placement: "ns/p", Replicas: 1, Until: now.Add(time.Minute),
		Amounts: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, Base: base}}, now)
	epoch := c.ReservationEpoch()
	c.UpsertInventory(utiltesting.MakeInventory("a", now.Add(30*time.Second), []*corev1.Node{node}))
	if c.ReservationEpoch() != epoch {
		t.Error("a heartbeat changed the reservation epoch")
	}
	c.UpsertInventory(utiltesting.MakeInventory("a", now.Add(time.Minute), []*corev1.Node{node},
		utiltesting.MakePod("ns", "p-0", "n", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})))
	if c.ReservationEpoch() == epoch {
		t.Error("the report that shows the pods left the epoch as it was")
	}
	if rs := c.Snapshot().Cluster(0).Reservations; len(rs) != 0 {
		t.Errorf("the reservation whose pods run is kept: %+v", rs)
	}
}
