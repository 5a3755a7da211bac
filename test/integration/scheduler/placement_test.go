package scheduler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestNumberOfClustersAndPredicates follows OCM's documented example: predicates select by
// label, numberOfClusters truncates, and the decision, its labels and owner are OCM's.
func TestNumberOfClustersAndPredicates(t *testing.T) {
	e := newEnv(t, "basics")
	for _, s := range []string{"a", "b", "c"} {
		e.createCluster(e.cluster(s).Label("env", "prod"))
	}
	e.createCluster(e.cluster("d").Label("env", "dev"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("prod", e.ns).PredicateLabels(map[string]string{"env": "prod"}))
	p := e.waitDecided("prod", e.names("a", "b", "c")...)
	e.waitCondition("prod", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
	e.waitCondition("prod", clusterv1beta1.PlacementConditionMisconfigured, metav1.ConditionFalse, "Succeedconfigured")

	_, objs, err := e.decided(t.Context(), "prod")
	if err != nil {
		t.Fatal(err)
	}
	d := objs[0]
	if d.Name != "prod-decision-1" || d.Labels[clusterv1beta1.DecisionGroupIndexLabel] != "0" || d.Labels[clusterv1beta1.DecisionGroupNameLabel] != "" {
		t.Errorf("decision %s labels %v, want prod-decision-1 with group index 0 and empty group name", d.Name, d.Labels)
	}
	if !metav1.IsControlledBy(&d, p) {
		t.Errorf("decision %s is not controlled by the placement: %v", d.Name, d.OwnerReferences)
	}
	if len(p.Status.DecisionGroups) != 1 || p.Status.DecisionGroups[0].ClustersCount != 3 {
		t.Errorf("status.decisionGroups = %+v, want one group of 3", p.Status.DecisionGroups)
	}

	e.createPlacement(utiltesting.MakePlacement("two", e.ns).NumberOfClusters(2).PredicateLabels(map[string]string{"env": "prod"}))
	e.waitDecided("two", e.names("a", "b")...)
	e.waitCondition("two", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")

	e.createPlacement(utiltesting.MakePlacement("five", e.ns).NumberOfClusters(5))
	e.waitCondition("five", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionFalse, "NotAllDecisionsScheduled")
}
