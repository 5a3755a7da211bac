package placement

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/google/go-cmp/cmp"
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

// TestLapsedEvents: a reservation that lapsed during the round is an event of its cluster,
// from the info with the reservation active to the info as it is, which may admit more; one
// that lapsed before the round, or is still active, is not.
func TestLapsedEvents(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC)
	since := now.Add(-expiryRound)
	node := utiltesting.MakeNode("n").Resource(corev1.ResourceCPU, "8").Obj()
	info := func(name string, until ...time.Time) *framework.ClusterInfo {
		in := framework.NewClusterInfo(utiltesting.MakeCluster(name).Obj(), nil, utiltesting.MakeInventory(name, now.Add(-time.Minute), []*corev1.Node{node}))
		for _, u := range until {
			in.Reservations = append(in.Reservations, framework.Reservation{Placement: "ns/other", Request: &inventory.Request{}, Replicas: 1, Until: u})
		}
		return in
	}
	snap := framework.NewSnapshot(framework.SnapshotInput{Clusters: []*framework.ClusterInfo{
		info("lapsed", now.Add(-10*time.Second), now.Add(time.Minute)),
		info("active", now.Add(time.Minute)),
		info("earlier", since.Add(-time.Second)),
		info("at-the-start", since),
		info("at-the-end", now),
		info("none"),
	}})
	var got []string
	for _, ev := range lapsedEvents(snap, since, now) {
		got = append(got, ev.Name())
		if !ev.MayAdmitMore() {
			t.Errorf("%s: the lapse of a reservation may admit more, says MayAdmitMore", ev.Name())
		}
		for k := range ev.New.Reservations {
			if r := ev.New.Reservations[k]; r.Until.After(since) && !ev.Old.Reservations[k].Active(now) {
				t.Errorf("%s: reservation %d (until %s) is not active in the old info", ev.Name(), k, r.Until)
			}
		}
	}
	if diff := cmp.Diff([]string{"at-the-end", "lapsed"}, got); diff != "" {
		t.Errorf("clusters with a lapse in (since, now] (-want,+got):\n%s", diff)
	}
}
