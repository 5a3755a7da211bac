package hpa

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestIntentsOf(t *testing.T) {
	intent := func(name, namespace, ref, scheduled string, valid *metav1.Condition) *v1alpha1.HPAIntent {
		in := utiltesting.MakeHPAIntent(name, namespace).Placement(ref).Obj()
		in.Generation = 1
		in.Status.ScheduledPlacement = scheduled
		if valid != nil {
			in.Status.Conditions = []metav1.Condition{*valid}
		}
		return in
	}
	validCond := func(status metav1.ConditionStatus, reason string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionValid, Status: status, Reason: reason, ObservedGeneration: 1}
	}
	deleting := intent("deleting", "ns", "p", "", validCond(metav1.ConditionTrue, "Valid"))
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	all := []*v1alpha1.HPAIntent{
		intent("z-names-p", "ns", "p", "", validCond(metav1.ConditionTrue, "Valid")),
		intent("a-names-p", "ns", "p", "", nil),
		intent("other-namespace", "other", "p", "", validCond(metav1.ConditionTrue, "Valid")),
		intent("names-q", "ns", "q", "", validCond(metav1.ConditionTrue, "Valid")),
		deleting,
		intent("moved-to-missing", "ns", "typo", "p", validCond(metav1.ConditionFalse, ReasonPlacementNotFound)),
		intent("moved-unjudged", "ns", "q", "p", nil),
		intent("moved-valid", "ns", "q", "p", validCond(metav1.ConditionTrue, "Valid")),
		intent("moved-invalid", "ns", "q", "p", validCond(metav1.ConditionFalse, string(ReasonInvalidRequirements))),
	}
	cases := map[string]struct {
		followScheduled bool
		want            []string
	}{
		"first pass":       {want: []string{"a-names-p", "z-names-p"}},
		"with the history": {followScheduled: true, want: []string{"a-names-p", "moved-to-missing", "moved-unjudged", "z-names-p"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, in := range IntentsOf("ns", "p", all, tc.followScheduled) {
				got = append(got, in.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("intents (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPlacementsOf(t *testing.T) {
	cases := map[string]struct {
		ref, scheduled string
		want           []string
	}{
		"never scheduled":        {ref: "p", want: []string{"p"}},
		"scheduled with its ref": {ref: "p", scheduled: "p", want: []string{"p"}},
		"moved":                  {ref: "q", scheduled: "p", want: []string{"p", "q"}},
		"moved, sorted":          {ref: "a", scheduled: "p", want: []string{"a", "p"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := utiltesting.MakeHPAIntent("in", "ns").Placement(tc.ref).Obj()
			in.Status.ScheduledPlacement = tc.scheduled
			if diff := cmp.Diff(tc.want, PlacementsOf(in)); diff != "" {
				t.Errorf("placements (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestIntentsOfWithinPlacementsOf: whatever the history and the verdicts, an intent that
// IntentsOf gives for a placement names that placement in PlacementsOf, so that an index or
// a handler built on PlacementsOf finds every intent of a placement.
func TestIntentsOfWithinPlacementsOf(t *testing.T) {
	var all []*v1alpha1.HPAIntent
	verdicts := []*metav1.Condition{
		nil,
		{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: 1},
		{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: ReasonPlacementNotFound, ObservedGeneration: 1},
		{Type: v1alpha1.ConditionValid, Status: metav1.ConditionFalse, Reason: string(ReasonInvalidRequirements), ObservedGeneration: 1},
	}
	placements := []string{"p", "q"}
	for _, ref := range placements {
		for _, scheduled := range append([]string{""}, placements...) {
			for i, v := range verdicts {
				in := utiltesting.MakeHPAIntent(fmt.Sprintf("%s-%s-%d", ref, scheduled, i), "ns").Placement(ref).Obj()
				in.Generation = 1
				in.Status.ScheduledPlacement = scheduled
				if v != nil {
					in.Status.Conditions = []metav1.Condition{*v}
				}
				all = append(all, in)
			}
		}
	}
	found := 0
	for _, p := range placements {
		for _, follow := range []bool{false, true} {
			for _, in := range IntentsOf("ns", p, all, follow) {
				found++
				if !slices.Contains(PlacementsOf(in), p) {
					t.Errorf("IntentsOf(%s, followScheduled=%t) gives %s, whose PlacementsOf %v does not name it", p, follow, in.Name, PlacementsOf(in))
				}
			}
		}
	}
	if found == 0 {
		t.Fatal("IntentsOf gave no intent at all")
	}
}
