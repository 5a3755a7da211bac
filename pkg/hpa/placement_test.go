package hpa

import (
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
