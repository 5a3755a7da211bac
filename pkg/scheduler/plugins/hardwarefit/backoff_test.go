package hardwarefit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// TestBackoff checks that a cluster an intent moved away from is not feasible for its
// placement until the back-off ends, decided or not, that explain says why, and that the
// placement comes back when the first back-off ends.
func TestBackoff(t *testing.T) {
	fleet := []cluster{
		reporting("a", nodes("n", 1, cpuNode("8"))),
		reporting("b", nodes("n", 1, cpuNode("8"))),
		reporting("c", nodes("n", 1, cpuNode("8"))),
	}
	moved := func(moves ...fleetfitv1alpha1.ClusterMove) *fleetfitv1alpha1.HPAIntent {
		in := intent(consumer("web", 1, "1"))
		in.Status.Moves = moves
		return in
	}
	move := func(from string, at, until time.Duration, failures int32) fleetfitv1alpha1.ClusterMove {
		return fleetfitv1alpha1.ClusterMove{From: from, Time: metav1.NewTime(now.Add(at)), Reason: "3 pods unschedulable for 6m0s: 0/4 nodes are available",
			Failures: failures, BackoffUntil: metav1.NewTime(now.Add(until))}
	}
	tests := map[string]struct {
		intent      *fleetfitv1alpha1.HPAIntent
		decided     []string
		want        []string
		wantReasons map[string]string
		wantRequeue time.Duration
	}{
		"no move": {
			intent: moved(),
			want:   []string{"a", "b", "c"},
		},
		"a decided cluster in back-off is rejected": {
			intent:  moved(move("a", -time.Minute, 9*time.Minute, 1)),
			decided: []string{"a"},
			want:    []string{"b", "c"},
			wantReasons: map[string]string{
				"a": "HPAIntent app moved away from this cluster at 2025-06-01T11:59:00Z (3 pods unschedulable for 6m0s: 0/4 nodes are available); not chosen again for it until 2025-06-01T12:09:00Z (back-off after 1 move(s) away from it)",
			},
			wantRequeue: 9 * time.Minute,
		},
		"the latest move from a cluster counts": {
			intent: moved(move("b", -time.Hour, -40*time.Minute, 1), move("a", -30*time.Minute, -10*time.Minute, 1), move("b", -5*time.Minute, 15*time.Minute, 2)),
			want:   []string{"a", "c"},
			wantReasons: map[string]string{
				"b": "HPAIntent app moved away from this cluster at 2025-06-01T11:55:00Z (3 pods unschedulable for 6m0s: 0/4 nodes are available); not chosen again for it until 2025-06-01T12:15:00Z (back-off after 2 move(s) away from it)",
			},
			wantRequeue: 15 * time.Minute,
		},
		"a back-off that ended leaves the cluster feasible": {
			intent:  moved(move("a", -time.Hour, 0, 1)),
			decided: []string{"b"},
			want:    []string{"a", "b", "c"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(fleet)
			req := request(snap, []*fleetfitv1alpha1.HPAIntent{tc.intent}, tc.decided...)
			p := newPlugin(t)
			state := framework.NewCycleState()
			if st := p.PreFilter(t.Context(), state, snap, req); st != nil {
				t.Fatalf("PreFilter: %v", st)
			}
			rec := &recorder{snap: snap, reasons: map[string]string{}}
			got, st := p.Filter(t.Context(), state, snap, req, framework.NewFullBitset(snap.NumClusters()), rec)
			if st != nil {
				t.Fatalf("Filter: %v", st)
			}
			if diff := cmp.Diff(tc.want, names(snap, got)); diff != "" {
				t.Errorf("feasible (-want,+got):\n%s", diff)
			}
			if tc.wantReasons == nil {
				tc.wantReasons = map[string]string{}
			}
			if diff := cmp.Diff(tc.wantReasons, rec.reasons); diff != "" {
				t.Errorf("reasons (-want,+got):\n%s", diff)
			}
			if got := p.RequeueAfter(t.Context(), state, snap, req); got != tc.wantRequeue {
				t.Errorf("RequeueAfter = %s, want %s", got, tc.wantRequeue)
			}
		})
	}
}
