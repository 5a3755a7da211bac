package scheduler

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// waitConditionMessage waits until the placement has the condition with status, reason and
// message.
func (e *env) waitConditionMessage(placement, condType string, status metav1.ConditionStatus, reason, message string) {
	e.t.Helper()
	framework.Eventually(e.t, func(ctx context.Context) error {
		p, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, placement, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, condType)
		if c == nil || c.Status != status || c.Reason != reason || c.Message != message {
			return fmt.Errorf("condition %s is %+v, want %s/%s %q", condType, c, status, reason, message)
		}
		return nil
	})
}

// TestNoClusterSetBindings: a namespace without ManagedClusterSetBindings can use no cluster,
// and OCM says so in the Satisfied condition; binding a set afterwards schedules the placement.
func TestNoClusterSetBindings(t *testing.T) {
	e := newEnv(t, "sets-nobinding")
	e.createCluster(e.cluster("a"))
	bindings := e.clusters.ClusterV1beta2().ManagedClusterSetBindings(e.ns)
	if err := bindings.Delete(t.Context(), e.set, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns))
	e.waitConditionMessage("p", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionFalse,
		"NoManagedClusterSetBindings", "No valid ManagedClusterSetBindings found in placement namespace")
	if got, _, err := e.decided(t.Context(), "p"); err != nil || len(got) != 0 {
		t.Errorf("decided %v (err %v), want no cluster", got, err)
	}

	if _, err := bindings.Create(t.Context(), utiltesting.MakeClusterSetBinding(e.ns, e.set), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitDecided("p", e.names("a")...)
	e.waitCondition("p", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
}

// TestClusterSetsNotBound: spec.clusterSets naming only sets that are not bound to the
// namespace leaves no eligible set (OCM's NoIntersection), even though another set is bound.
func TestClusterSetsNotBound(t *testing.T) {
	e := newEnv(t, "sets-nointersection")
	e.createCluster(e.cluster("a"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns).ClusterSets("unbound-one", "unbound-two"))
	e.waitConditionMessage("p", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionFalse,
		"NoIntersection", "None of ManagedClusterSets [unbound-one,unbound-two] is bound to placement namespace")

	// Naming the bound set as well makes the intersection its members.
	e.updatePlacement("p", func(p *clusterv1beta1.Placement) { p.Spec.ClusterSets = append(p.Spec.ClusterSets, e.set) })
	e.waitDecided("p", e.names("a")...)
	e.waitCondition("p", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
}

// TestEmptyClusterSet: a bound set without members is AllManagedClusterSetsEmpty, with the
// set named in OCM's message; the first member schedules the placement.
func TestEmptyClusterSet(t *testing.T) {
	e := newEnv(t, "sets-empty")
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns))
	e.waitConditionMessage("p", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionFalse,
		"AllManagedClusterSetsEmpty", fmt.Sprintf("All ManagedClusterSets [%s] have no member ManagedCluster", e.set))

	e.createCluster(e.cluster("a"))
	e.waitDecided("p", e.names("a")...)
	e.waitCondition("p", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
}

// TestLabelSelectorClusterSet: a ManagedClusterSet with a LabelSelector contains every cluster
// with the labels, whatever exclusive set it is in; a cluster whose labels stop matching leaves
// the set and is dropped from the decisions, and so is a cluster moved to another exclusive set.
func TestLabelSelectorClusterSet(t *testing.T) {
	e := newEnv(t, "sets-labelselector")
	byTeam := e.set + "-team"
	sets := e.clusters.ClusterV1beta2().ManagedClusterSets()
	if _, err := sets.Create(t.Context(), utiltesting.MakeLabelClusterSet(byTeam, &metav1.LabelSelector{
		MatchLabels: map[string]string{"team": e.set},
	}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sets.Delete(context.Background(), byTeam, metav1.DeleteOptions{}) })
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSetBindings(e.ns).Create(t.Context(),
		utiltesting.MakeClusterSetBinding(e.ns, byTeam), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.createCluster(e.cluster("a").Label("team", e.set))
	e.createCluster(e.cluster("b").Label("team", e.set))
	e.createCluster(e.cluster("c"))
	// In no exclusive set of this test, but in the label set.
	e.createCluster(utiltesting.MakeCluster(e.set+"-d").Label("team", e.set))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("team", e.ns).ClusterSets(byTeam))
	e.createPlacement(utiltesting.MakePlacement("exclusive", e.ns).ClusterSets(e.set))
	e.waitDecided("team", e.names("a", "b", "d")...)
	e.waitDecided("exclusive", e.names("a", "b", "c")...)

	e.updateCluster(e.set+"-b", func(cl *clusterv1.ManagedCluster) { delete(cl.Labels, "team") })
	e.waitDecided("team", e.names("a", "d")...)

	e.updateCluster(e.set+"-c", func(cl *clusterv1.ManagedCluster) { cl.Labels[clusterv1beta2.ClusterSetLabel] = "default" })
	e.waitDecided("exclusive", e.names("a", "b")...)
}

// TestTerminatingClusterIsNotSelected: a cluster being deleted (held by a finalizer) is no
// longer selected, and a new placement never selects it.
func TestTerminatingClusterIsNotSelected(t *testing.T) {
	e := newEnv(t, "sets-terminating")
	const hold = "test.fleetfit.io/hold"
	e.createCluster(e.cluster("a"))
	e.createCluster(e.cluster("b").Finalizer(hold))
	t.Cleanup(func() {
		cl, err := e.clusters.ClusterV1().ManagedClusters().Get(context.Background(), e.set+"-b", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err == nil {
			cl.Finalizers = nil
			_, err = e.clusters.ClusterV1().ManagedClusters().Update(context.Background(), cl, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("releasing cluster %s: %v", e.set+"-b", err)
		}
	})
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns))
	e.waitDecided("p", e.names("a", "b")...)

	if err := e.clusters.ClusterV1().ManagedClusters().Delete(t.Context(), e.set+"-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cl, err := e.clusters.ClusterV1().ManagedClusters().Get(t.Context(), e.set+"-b", metav1.GetOptions{})
	if err != nil || cl.DeletionTimestamp.IsZero() {
		t.Fatalf("cluster %s should be terminating: %v, %v", e.set+"-b", cl, err)
	}
	e.waitDecided("p", e.names("a")...)

	e.createPlacement(utiltesting.MakePlacement("new", e.ns))
	e.waitDecided("new", e.names("a")...)
}
