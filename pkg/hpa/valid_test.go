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
