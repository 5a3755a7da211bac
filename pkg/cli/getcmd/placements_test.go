package getcmd

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestIntentsOf: the HPAINTENTS column names the intents the scheduler reads for the
// placement (hpa.IntentsOf): from a hub, also the one that moved to a Placement that does not
// exist and so still holds this one's decisions; in fleet files, as simulate schedules, only
// those that name it. An intent being deleted shapes nothing.
func TestIntentsOf(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, ObservedGeneration: 1}
	}
	intent := func(name, namespace, ref, scheduled string, conds ...metav1.Condition) *fleetfitv1alpha1.HPAIntent {
		in := ut.MakeHPAIntent(name, namespace).Placement(ref).Obj()
		in.Generation = 1
		in.Status.ScheduledPlacement = scheduled
		in.Status.Conditions = conds
		return in
	}
	moving := intent("moving", "ns", "web", "web", cond(fleetfitv1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"))
	moving.Status.Moves = []fleetfitv1alpha1.ClusterMove{
		{From: "cluster1", Completed: &metav1.Time{Time: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)}},
		{From: "cluster2"},
	}
	deleting := intent("deleting", "ns", "web", "web")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	all := []*fleetfitv1alpha1.HPAIntent{
		intent("web", "ns", "web", "web", cond(fleetfitv1alpha1.ConditionValid, metav1.ConditionTrue, "Valid"),
			cond(fleetfitv1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
			cond(fleetfitv1alpha1.ConditionDelivered, metav1.ConditionFalse, "Delivering")),
		intent("new", "ns", "web", ""),
		intent("moved", "ns", "typo", "web", cond(fleetfitv1alpha1.ConditionValid, metav1.ConditionFalse, hpa.ReasonPlacementNotFound)),
		intent("elsewhere", "other", "web", ""),
		moving,
		deleting,
	}
	p := ut.MakePlacement("web", "ns").Obj()
	cases := map[string]struct {
		fromHub bool
		want    string
	}{
		"from a hub":       {fromHub: true, want: "moved (NotValid), moving (Scheduled,MovingFrom=cluster2), new (pending), web (Scheduled,NotDelivered)"},
		"from fleet files": {want: "moving (Scheduled,MovingFrom=cluster2), new (pending), web (Scheduled,NotDelivered)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := intentsOf(all, p, tc.fromHub); got != tc.want {
				t.Errorf("intentsOf = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestIntentStatesOfASplit: a split intent's states show its shares and what waits.
func TestIntentStatesOfASplit(t *testing.T) {
	in := ut.MakeHPAIntent("web", "ns").Placement("web").Split(fleetfitv1alpha1.ReplicaSplit{}).Obj()
	in.Status.Conditions = []metav1.Condition{{Type: fleetfitv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: "PartlyScheduled"}}
	in.Status.Split = &fleetfitv1alpha1.SplitStatus{Replicas: 14, Unplaced: 2, Shares: []fleetfitv1alpha1.ClusterShare{
		{ClusterName: "cluster1", Replicas: 4}, {ClusterName: "cluster3", Replicas: 8}}}
	got := strings.Join(IntentStates(in), ",")
	if want := "Scheduled,Split=cluster1:4/cluster3:8,Unplaced=2"; got != want {
		t.Errorf("IntentStates = %q, want %q", got, want)
	}
}
