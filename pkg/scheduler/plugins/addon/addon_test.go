package addon

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var (
	now    = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	past   = now.Add(-time.Second)
	future = now.Add(time.Hour)
)

func TestScore(t *testing.T) {
	clusters := []*clusterv1.ManagedCluster{
		st.MakeCluster("c1").Obj(), st.MakeCluster("c2").Obj(), st.MakeCluster("c3").Obj(), st.MakeCluster("c4").Obj(),
	}
	type status struct {
		Code    framework.Code
		Message string
	}
	tests := map[string]struct {
		scores     []*clusterv1alpha1.AddOnPlacementScore
		feasible   []string
		want       map[string]int64
		wantStatus status
	}{
		"values, missing objects and missing scores": {
			scores: []*clusterv1alpha1.AddOnPlacementScore{
				st.MakeScore("c1", "demo", nil, map[string]int32{"cpu": 50, "mem": 1}),
				st.MakeScore("c2", "demo", &future, map[string]int32{"cpu": -20}),
				st.MakeScore("c3", "other", nil, map[string]int32{"cpu": 70}),
				st.MakeScore("c4", "demo", nil, map[string]int32{"mem": 70}),
			},
			want: map[string]int64{"c1": 50, "c2": -20, "c3": 0, "c4": 0},
		},
		"values out of range are left to the scheduler to clamp": {
			scores: []*clusterv1alpha1.AddOnPlacementScore{
				st.MakeScore("c1", "demo", nil, map[string]int32{"cpu": 150}),
				st.MakeScore("c2", "demo", nil, map[string]int32{"cpu": -1000}),
			},
			want: map[string]int64{"c1": 150, "c2": -1000, "c3": 0, "c4": 0},
		},
		"expired scores are 0 with a warning naming each object in cluster order": {
			scores: []*clusterv1alpha1.AddOnPlacementScore{
				st.MakeScore("c3", "demo", &past, map[string]int32{"cpu": 30}),
				st.MakeScore("c1", "demo", &past, map[string]int32{"cpu": 50}),
				st.MakeScore("c2", "demo", &future, map[string]int32{"cpu": 40}),
			},
			want:       map[string]int64{"c1": 0, "c2": 40, "c3": 0, "c4": 0},
			wantStatus: status{framework.Warning, "AddOnPlacementScores c1/demo c3/demo expired"},
		},
		"a score valid until now has not expired": {
			scores: []*clusterv1alpha1.AddOnPlacementScore{
				st.MakeScore("c1", "demo", &now, map[string]int32{"cpu": 50}),
			},
			want: map[string]int64{"c1": 50, "c2": 0, "c3": 0, "c4": 0},
		},
		"infeasible clusters are neither scored nor reported": {
			scores: []*clusterv1alpha1.AddOnPlacementScore{
				st.MakeScore("c1", "demo", nil, map[string]int32{"cpu": 50}),
				st.MakeScore("c2", "demo", &past, map[string]int32{"cpu": 40}),
				st.MakeScore("c3", "demo", nil, map[string]int32{"cpu": 30}),
			},
			feasible: []string{"c1", "c4"},
			want:     map[string]int64{"c1": 50, "c2": 0, "c3": 0, "c4": 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := cachetest.Fleet{Clusters: clusters, Scores: tc.scores}.Snapshot()
			req := &framework.Request{
				Placement: st.MakePlacement("p", "ns").Obj(),
				Decided:   framework.NewBitset(snap.NumClusters()),
				Now:       now,
			}
			feasible := framework.NewFullBitset(snap.NumClusters())
			if tc.feasible != nil {
				feasible = snap.BitsetOf(tc.feasible)
			}
			p, err := New(nil, framework.Args{AddOn: &clusterv1beta1.AddOnScore{ResourceName: "demo", ScoreName: "cpu"}})
			if err != nil {
				t.Fatal(err)
			}
			scores := make([]int64, snap.NumClusters())
			s := p.(framework.ScorePlugin).Score(t.Context(), framework.NewCycleState(), snap, req, feasible, scores)
			if diff := cmp.Diff(tc.wantStatus, status{s.Code(), s.Message()}); diff != "" {
				t.Errorf("status (-want,+got):\n%s", diff)
			}
			got := map[string]int64{}
			for i := range snap.NumClusters() {
				got[snap.Cluster(i).Name()] = scores[i]
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scores (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := map[string]struct {
		args     framework.Args
		wantName string
		wantErr  bool
	}{
		"named after the coordinate": {
			args:     framework.Args{AddOn: &clusterv1beta1.AddOnScore{ResourceName: "demo", ScoreName: "cpu"}},
			wantName: "AddOn/demo/cpu",
		},
		"no addOn":         {wantErr: true},
		"no score name":    {args: framework.Args{AddOn: &clusterv1beta1.AddOnScore{ResourceName: "demo"}}, wantErr: true},
		"no resource name": {args: framework.Args{AddOn: &clusterv1beta1.AddOnScore{ScoreName: "cpu"}}, wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, err := New(nil, tc.args)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Fatalf("error = %v, want error %t", err, tc.wantErr)
			}
			if err == nil && p.Name() != tc.wantName {
				t.Errorf("Name() = %q, want %q", p.Name(), tc.wantName)
			}
		})
	}
}
