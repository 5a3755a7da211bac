package hpa

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestIsValid(t *testing.T) {
	cond := func(status metav1.ConditionStatus, generation int64) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionValid, Status: status, Reason: "R", ObservedGeneration: generation}
	}
	cases := map[string]struct {
		conditions  []metav1.Condition
		valid, know bool
	}{
		"no condition":             {},
		"condition of an old spec": {conditions: []metav1.Condition{cond(metav1.ConditionTrue, 1)}},
		"unknown":                  {conditions: []metav1.Condition{cond(metav1.ConditionUnknown, 2)}},
		"valid":                    {conditions: []metav1.Condition{cond(metav1.ConditionTrue, 2)}, valid: true, know: true},
		"invalid":                  {conditions: []metav1.Condition{cond(metav1.ConditionFalse, 2)}, know: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := utiltesting.FwallHPAIntent("apps").Obj()
			in.Generation = 2
			in.Status.Conditions = tc.conditions
			valid, known := IsValid(in)
			if valid != tc.valid || known != tc.know {
				t.Errorf("IsValid = (%v, %v), want (%v, %v)", valid, known, tc.valid, tc.know)
			}
		})
	}
}

func TestIncomplete(t *testing.T) {
	cond := func(status metav1.ConditionStatus, reason string, generation int64) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionValid, Status: status, Reason: reason, ObservedGeneration: generation}}
	}
	cases := map[string]struct {
		conditions []metav1.Condition
		want       bool
	}{
		"no condition":               {},
		"incomplete":                 {conditions: cond(metav1.ConditionFalse, ReasonIncomplete, 2), want: true},
		"incomplete, an older spec":  {conditions: cond(metav1.ConditionFalse, ReasonIncomplete, 1)},
		"invalid for another reason": {conditions: cond(metav1.ConditionFalse, ReasonPlacementNotFound, 2)},
		"valid":                      {conditions: cond(metav1.ConditionTrue, "Valid", 2)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := utiltesting.MakeHPAIntent("i", "apps").Placement("p").Obj()
			in.Generation = 2
			in.Status.Conditions = tc.conditions
			if got := Incomplete(in); got != tc.want {
				t.Errorf("Incomplete = %v, want %v", got, tc.want)
			}
		})
	}
}
