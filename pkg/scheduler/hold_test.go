package scheduler_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func newDefaultScheduler(t *testing.T) *scheduler.Scheduler {
	t.Helper()
	fleet := testFleet()
	s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), fleet.ScoreLister()),
		plugins.NewRegistry(), plugins.DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPinned: pinned clusters are selected first while they are feasible, whatever their
// scores; the other slots are filled by rank.
func TestPinned(t *testing.T) {
	tests := map[string]struct {
		placement *st.PlacementWrapper
		pinned    []string
		want      []string
	}{
		"no pins: the best by score (ResourceAllocatableCPU prefers c3 and c6)": {
			placement: st.MakePlacement("p", "ns").NumberOfClusters(2).Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("ResourceAllocatableCPU", 1),
			want:      []string{"c3", "c6"},
		},
		"a pinned cluster stays although others score higher": {
			placement: st.MakePlacement("p", "ns").NumberOfClusters(2).Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("ResourceAllocatableCPU", 1),
			pinned:    []string{"c1"},
			want:      []string{"c1", "c3"},
		},
		"a pinned cluster that is no longer feasible leaves": {
			placement: st.MakePlacement("p", "ns").NumberOfClusters(2).Mode(clusterv1beta1.PrioritizerPolicyModeExact).
				BuiltIn("ResourceAllocatableCPU", 1).PredicateLabels(map[string]string{"tier": "gold"}),
			pinned: []string{"c6", "c4"},
			want:   []string{"c4", "c3"},
		},
		"more pinned clusters than wanted: the best of them": {
			placement: st.MakePlacement("p", "ns").NumberOfClusters(1).Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("ResourceAllocatableCPU", 1),
			pinned:    []string{"c1", "c2"},
			want:      []string{"c2"},
		},
	}
	s := newDefaultScheduler(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := testFleet().Snapshot()
			req := &framework.Request{Placement: tc.placement.Obj(), Decided: snap.BitsetOf(tc.pinned), Now: now}
			if tc.pinned != nil {
				req.Pinned = snap.BitsetOf(tc.pinned)
			}
			res := s.Schedule(t.Context(), snap, req, scheduler.Options{})
			var got []string
			for _, d := range res.Decisions() {
				got = append(got, d.ClusterName)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestFollows: a placement follows its scores when its reported-state prioritizers can
// outweigh Steady, or nothing holds its decisions.
func TestFollows(t *testing.T) {
	tests := map[string]struct {
		placement *st.PlacementWrapper
		want      bool
	}{
		"OCM's defaults (Balance 1, Steady 1) hold": {
			placement: st.MakePlacement("p", "ns"),
		},
		"story 3: ResourceRatioCPU 2 and ResourceAllocatableMemory 2 beside Steady 1 follow": {
			placement: st.MakePlacement("p", "ns").BuiltIn("ResourceRatioCPU", 2).BuiltIn("ResourceAllocatableMemory", 2),
			want:      true,
		},
		"story 4: ResourceAllocatableCPU 1 under Steady 3 holds": {
			placement: st.MakePlacement("p", "ns").Mode(clusterv1beta1.PrioritizerPolicyModeExact).
				BuiltIn("ResourceAllocatableCPU", 1).BuiltIn("Steady", 3),
		},
		"an add-on score of weight 1 beside the default Steady follows": {
			placement: st.MakePlacement("p", "ns").AddOn("demo", "score", 1),
			want:      true,
		},
		"Steady turned off: nothing holds": {
			placement: st.MakePlacement("p", "ns").Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("Balance", 1),
			want:      true,
		},
		"a misconfigured policy does not follow": {
			placement: st.MakePlacement("p", "ns").BuiltIn("NoSuchPrioritizer", 5),
		},
	}
	s := newDefaultScheduler(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := s.Follows(tc.placement.Obj()); got != tc.want {
				t.Errorf("Follows() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSticky: in a sticky cycle (a placement that follows its scores), a decided cluster keeps
// its place unless another scores more than StickyMargin (per unit of the largest weight)
// above it: no back and forth between clusters whose scores are close. The add-on scores are
// c5 50, c6 60, c2 20; the other prioritizers give every cluster the same.
func TestSticky(t *testing.T) {
	placement := st.MakePlacement("p", "ns").NumberOfClusters(1).Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1)
	tests := map[string]struct {
		decided []string
		sticky  bool
		want    []string
	}{
		"not sticky: the best score wins":        {decided: []string{"c5"}, want: []string{"c6"}},
		"sticky: 10 points better is not enough": {decided: []string{"c5"}, sticky: true, want: []string{"c5"}},
		"sticky: 40 points better is":            {decided: []string{"c2"}, sticky: true, want: []string{"c6"}},
	}
	s := newDefaultScheduler(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := testFleet().Snapshot()
			req := &framework.Request{Placement: placement.Obj(), Decided: snap.BitsetOf(tc.decided), Sticky: tc.sticky, Now: now}
			res := s.Schedule(t.Context(), snap, req, scheduler.Options{})
			var got []string
			for _, d := range res.Decisions() {
				got = append(got, d.ClusterName)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s", diff)
			}
		})
	}
}
