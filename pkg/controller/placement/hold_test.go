package placement

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestChangedSinceScheduled(t *testing.T) {
	placement := func(generation, observed int64) *clusterv1beta1.Placement {
		p := st.MakePlacement("p", "ns").Obj()
		p.Generation = generation
		if observed >= 0 {
			p.Status.Conditions = []metav1.Condition{{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionTrue, ObservedGeneration: observed}}
		}
		return p
	}
	intent := func(generation, observed int64, shaped string) *fleetfitv1alpha1.HPAIntent {
		in := st.MakeHPAIntent("app", "ns").Placement("p").Obj()
		in.Generation = generation
		in.Status.ScheduledPlacement = shaped
		if observed >= 0 {
			in.Status.Conditions = []metav1.Condition{{Type: fleetfitv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, ObservedGeneration: observed}}
		}
		return in
	}
	tests := map[string]struct {
		placement *clusterv1beta1.Placement
		intents   []*fleetfitv1alpha1.HPAIntent
		want      bool
	}{
		"scheduled at its generation":                 {placement: placement(2, 2)},
		"a new generation":                            {placement: placement(3, 2), want: true},
		"no condition yet":                            {placement: placement(1, -1)},
		"a condition from before generations counted": {placement: placement(4, 0)},
		"its intent scheduled at its generation":      {placement: placement(2, 2), intents: []*fleetfitv1alpha1.HPAIntent{intent(5, 5, "p")}},
		"its intent changed":                          {placement: placement(2, 2), intents: []*fleetfitv1alpha1.HPAIntent{intent(6, 5, "p")}, want: true},
		"an intent new to it":                         {placement: placement(2, 2), intents: []*fleetfitv1alpha1.HPAIntent{intent(1, -1, "")}, want: true},
		"an intent that shaped another placement":     {placement: placement(2, 2), intents: []*fleetfitv1alpha1.HPAIntent{intent(5, 5, "q")}, want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := changedSinceScheduled(tc.placement, tc.intents); got != tc.want {
				t.Errorf("changedSinceScheduled() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExpiryCheck(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		now  time.Time
		d    time.Duration
		want time.Duration
	}{
		"a lapse early in a round is looked at when it ends": {now: base, d: time.Second, want: expiryRound},
		"a lapse late in a round too":                        {now: base, d: expiryRound - time.Millisecond, want: expiryRound},
		"one just past a round's end, in the next":           {now: base.Add(10 * time.Second), d: 25 * time.Second, want: 50 * time.Second},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := expiryCheck(tc.now, tc.d)
			if got != tc.want {
				t.Errorf("expiryCheck() = %v, want %v", got, tc.want)
			}
			if got < tc.d {
				t.Errorf("expiryCheck() = %v, before the lapse %v later", got, tc.d)
			}
		})
	}
}
