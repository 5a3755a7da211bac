package balance

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
	clusters := func(names ...string) []*clusterv1.ManagedCluster {
		var out []*clusterv1.ManagedCluster
		for _, n := range names {
			out = append(out, st.MakeCluster(n).Obj())
		}
		return out
	}
	tests := map[string]struct {
		clusters []*clusterv1.ManagedCluster
		decided  map[string][]string
		// feasible defaults to every cluster.
		feasible []string
		want     map[string]int64
	}{
		"no decisions: every cluster scores 100": {
			clusters: clusters("c1", "c2"),
			want:     map[string]int64{"c1": 100, "c2": 100},
		},
		"own decisions do not count": {
			clusters: clusters("c1", "c2"),
			decided:  map[string][]string{"ns/p": {"c1", "c2"}},
			want:     map[string]int64{"c1": 100, "c2": 100},
		},
		"c1 has 3 decisions, one its own; c2 has 1": {
			clusters: clusters("c1", "c2", "c3"),
			decided: map[string][]string{
				"ns/p":     {"c1"},
				"ns/a":     {"c1", "c2"},
				"other/b":  {"c1"},
				"ns/empty": {},
			},
			// maxCount is 2 (c1 without the own decision): c1 2*int64(100*(0.5-1)), c2
			// 2*int64(100*(0.5-0.5)), c3 has no other decision.
			want: map[string]int64{"c1": -100, "c2": 0, "c3": 100},
		},
		"truncates before doubling as OCM does": {
			clusters: clusters("c1", "c2"),
			decided:  map[string][]string{"ns/a": {"c1", "c2"}, "ns/b": {"c1"}, "ns/c": {"c1"}},
			// c2: 2*int64(100*(0.5-1/3)) = 2*16.
			want: map[string]int64{"c1": -100, "c2": 32},
		},
		"maxCount includes clusters that are not feasible": {
			clusters: clusters("c1", "c2", "c3"),
			decided: map[string][]string{
				"ns/a": {"c1", "c2", "c3"},
				"ns/b": {"c1", "c3"},
				"ns/c": {"c3"},
				"ns/d": {"c3"},
			},
			feasible: []string{"c1", "c2"},
			want:     map[string]int64{"c1": 0, "c2": 50},
		},
		"decisions of clusters outside the snapshot are ignored": {
			clusters: clusters("c1"),
			decided:  map[string][]string{"ns/a": {"gone", "c1"}, "ns/b": {"gone"}},
			want:     map[string]int64{"c1": -100},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := cachetest.Fleet{Clusters: tc.clusters, Decided: tc.decided}.Snapshot()
			req := &framework.Request{
				Placement: st.MakePlacement("p", "ns").Obj(),
				Decided:   snap.BitsetOf(snap.DecidedNames("ns/p")),
				Now:       time.Now(),
			}
			feasible := framework.NewFullBitset(snap.NumClusters())
			if tc.feasible != nil {
				feasible = snap.BitsetOf(tc.feasible)
			}
			p, err := New(nil, framework.Args{})
			if err != nil {
				t.Fatal(err)
			}
			scores := make([]int64, snap.NumClusters())
			if s := p.(framework.ScorePlugin).Score(t.Context(), framework.NewCycleState(), snap, req, feasible, scores); !s.IsSuccess() {
				t.Fatalf("Score: %v", s)
			}
			got := map[string]int64{}
			feasible.ForEach(func(i int) { got[snap.Cluster(i).Name()] = scores[i] })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scores (-want,+got):\n%s", diff)
			}
		})
	}
}
