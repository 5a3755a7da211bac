package steady

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestScore(t *testing.T) {
	clusters := []*clusterv1.ManagedCluster{st.MakeCluster("c1").Obj(), st.MakeCluster("c2").Obj(), st.MakeCluster("c3").Obj()}
	tests := map[string]struct {
		decided  map[string][]string
		feasible []string
		// want holds every cluster's score, feasible or not.
		want map[string]int64
	}{
		"no decisions": {
			feasible: []string{"c1", "c2", "c3"},
			want:     map[string]int64{"c1": 0, "c2": 0, "c3": 0},
		},
		"own decisions score 100, other placements' do not count": {
			decided:  map[string][]string{"ns/p": {"c1", "c3"}, "ns/other": {"c2"}, "other/p": {"c2"}},
			feasible: []string{"c1", "c2", "c3"},
			want:     map[string]int64{"c1": 100, "c2": 0, "c3": 100},
		},
		"infeasible clusters are not scored": {
			decided:  map[string][]string{"ns/p": {"c1", "c3"}},
			feasible: []string{"c1", "c2"},
			want:     map[string]int64{"c1": 100, "c2": 0, "c3": 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := cachetest.Fleet{Clusters: clusters, Decided: tc.decided}.Snapshot()
			req := &framework.Request{
				Placement: st.MakePlacement("p", "ns").Obj(),
				Decided:   snap.BitsetOf(snap.DecidedNames("ns/p")),
				Now:       time.Now(),
			}
			p, err := New(nil, framework.Args{})
			if err != nil {
				t.Fatal(err)
			}
			scores := make([]int64, snap.NumClusters())
			if s := p.(framework.ScorePlugin).Score(t.Context(), framework.NewCycleState(), snap, req, snap.BitsetOf(tc.feasible), scores); !s.IsSuccess() {
				t.Fatalf("Score: %v", s)
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
