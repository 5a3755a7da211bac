package scheduler

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/placementmode"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// assertUnscheduled fails when the placement has decisions or any status: the hub has not
// touched it.
func (e *env) assertUnscheduled(name string) {
	e.t.Helper()
	got, objs, err := e.decided(e.t.Context(), name)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(objs) != 0 {
		e.t.Errorf("placement %s has decisions %v, want none", name, got)
	}
	p, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(p.Status.Conditions) != 0 || p.Status.NumberOfSelectedClusters != 0 || len(p.Status.DecisionGroups) != 0 {
		e.t.Errorf("placement %s has status %+v, want none", name, p.Status)
	}
}

// TestSchedulingDisabledAnnotation: as the only placement controller (the default mode),
// fleetfit leaves alone a placement with OCM's experimental-scheduling-disable annotation,
// unless it also carries the fleetfit.io/scheduler label.
func TestSchedulingDisabledAnnotation(t *testing.T) {
	e := newEnv(t, "coexist-all")
	e.createCluster(e.cluster("a"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("disabled", e.ns).Annotation(clusterv1beta1.PlacementDisableAnnotation, "true"))
	e.createPlacement(utiltesting.MakePlacement("disabled-false", e.ns).Annotation(clusterv1beta1.PlacementDisableAnnotation, "false"))
	e.createPlacement(utiltesting.MakePlacement("normal", e.ns))
	// Created in this order, so when "normal" is decided the hub had "disabled" first.
	e.waitDecided("normal", e.names("a")...)
	e.waitDecided("disabled-false", e.names("a")...)
	e.assertUnscheduled("disabled")

	e.updatePlacement("disabled", func(p *clusterv1beta1.Placement) {
		p.Labels = map[string]string{placementmode.SchedulerLabel: "true"}
	})
	e.waitDecided("disabled", e.names("a")...)
	e.waitCondition("disabled", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
}

// TestAnnotatedMode: beside OCM's placement controller (--placements=annotated), fleetfit
// schedules only the placements that OCM leaves alone (the disable annotation) and that ask
// for fleetfit (the fleetfit.io/scheduler label); it writes neither decisions nor status for
// any other.
func TestAnnotatedMode(t *testing.T) {
	e := newEnv(t, "coexist-annotated")
	e.createCluster(e.cluster("a"))
	e.startHub("--placements=annotated")

	e.createPlacement(utiltesting.MakePlacement("plain", e.ns))
	e.createPlacement(utiltesting.MakePlacement("annotation-only", e.ns).Annotation(clusterv1beta1.PlacementDisableAnnotation, "true"))
	e.createPlacement(utiltesting.MakePlacement("label-only", e.ns).Label(placementmode.SchedulerLabel, "true"))
	e.createPlacement(utiltesting.MakePlacement("fleetfit", e.ns).
		Annotation(clusterv1beta1.PlacementDisableAnnotation, "true").Label(placementmode.SchedulerLabel, "true"))
	e.waitDecided("fleetfit", e.names("a")...)
	e.waitCondition("fleetfit", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
	for _, name := range []string{"plain", "annotation-only", "label-only"} {
		e.assertUnscheduled(name)
	}

	// Handing a placement over to fleetfit schedules it.
	e.updatePlacement("annotation-only", func(p *clusterv1beta1.Placement) {
		p.Labels = map[string]string{placementmode.SchedulerLabel: "true"}
	})
	e.waitDecided("annotation-only", e.names("a")...)
}
