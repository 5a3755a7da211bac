package tainttoleration

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var (
	now     = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	added   = now.Add(-10 * time.Minute)
	exists  = clusterv1beta1.TolerationOpExists
	equal   = clusterv1beta1.TolerationOpEqual
	noSel   = clusterv1.TaintEffectNoSelect
	ifNew   = clusterv1.TaintEffectNoSelectIfNew
	prefer  = clusterv1.TaintEffectPreferNoSelect
	noValue = ""
)

type reasons struct {
	snap *framework.Snapshot
	got  map[string]string
}

func (r *reasons) Reject(i int, reason string) { r.got[r.snap.Cluster(i).Name()] = reason }

type fixture struct {
	clusters    []*clusterv1.ManagedCluster
	tolerations []clusterv1beta1.Toleration
	decided     []string
}

func (f fixture) build() (*framework.Snapshot, *framework.Request) {
	snap := cachetest.Fleet{Clusters: f.clusters, Decided: map[string][]string{"ns/p": f.decided}}.Snapshot()
	pl := st.MakePlacement("p", "ns")
	for _, t := range f.tolerations {
		pl.Toleration(t)
	}
	return snap, &framework.Request{Placement: pl.Obj(), Decided: snap.BitsetOf(snap.DecidedNames("ns/p")), Now: now}
}

func newPlugin(t *testing.T) *TaintToleration {
	t.Helper()
	p, err := New(nil, framework.Args{})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*TaintToleration)
}

func gpuCluster(effect clusterv1.TaintEffect) *clusterv1.ManagedCluster {
	return st.MakeCluster("gpu").Taint("gpu", "maintenance", effect, added).Obj()
}

func TestFilter(t *testing.T) {
	plain := st.MakeCluster("plain").Obj()
	tests := map[string]struct {
		fixture
		// nil candidates means every cluster.
		candidates  []string
		want        []string
		wantReasons map[string]string
		wantStatus  string
	}{
		"clusters without taints pass": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{plain}},
			want:    []string{"plain"},
		},
		"NoSelect without toleration is filtered": {
			fixture:     fixture{clusters: []*clusterv1.ManagedCluster{plain, gpuCluster(noSel)}},
			want:        []string{"plain"},
			wantReasons: map[string]string{"gpu": "taint gpu=maintenance:NoSelect is not tolerated"},
		},
		"NoSelect filters decided clusters too": {
			fixture:     fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)}, decided: []string{"gpu"}},
			want:        []string{},
			wantReasons: map[string]string{"gpu": "taint gpu=maintenance:NoSelect is not tolerated"},
		},
		"NoSelect tolerated with Equal": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", equal, "maintenance", noSel)}},
			want: []string{"gpu"},
		},
		"empty operator means Equal and compares values": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", "", "upgrade", noSel)}},
			want:        []string{},
			wantReasons: map[string]string{"gpu": "taint gpu=maintenance:NoSelect is not tolerated"},
		},
		"Exists matches any value of the key": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, noSel)}},
			want: []string{"gpu"},
		},
		"another key is not tolerated": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("disk", exists, noValue, noSel)}},
			want:        []string{},
			wantReasons: map[string]string{"gpu": "taint gpu=maintenance:NoSelect is not tolerated"},
		},
		"empty key with Exists matches every key": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{
				st.MakeCluster("c1").Taint("a", "", noSel, added).Taint("b", "x", noSel, added).Obj()},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("", exists, noValue, "")}},
			want: []string{"c1"},
		},
		"empty effect matches every effect": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel), st.MakeCluster("new").Taint("gpu", "maintenance", ifNew, added).Obj()},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", equal, "maintenance", "")}},
			want: []string{"gpu", "new"},
		},
		"another effect is not tolerated": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, ifNew)}},
			want:        []string{},
			wantReasons: map[string]string{"gpu": "taint gpu=maintenance:NoSelect is not tolerated"},
		},
		"every taint must be tolerated": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{
				st.MakeCluster("c1").Taint("gpu", "maintenance", noSel, added).Taint("disk", "", noSel, added).Obj()},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, noSel)}},
			want:        []string{},
			wantReasons: map[string]string{"c1": "taint disk:NoSelect is not tolerated"},
		},
		"PreferNoSelect never filters": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(prefer)}},
			want:    []string{"gpu"},
		},
		"NoSelectIfNew filters a new cluster": {
			fixture:     fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(ifNew)}},
			want:        []string{},
			wantReasons: map[string]string{"gpu": "taint gpu=maintenance:NoSelectIfNew is not tolerated"},
		},
		"NoSelectIfNew keeps a decided cluster": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(ifNew)}, decided: []string{"gpu"}},
			want:    []string{"gpu"},
		},
		"NoSelectIfNew tolerated for a new cluster": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(ifNew)},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, ifNew)}},
			want: []string{"gpu"},
		},
		"tolerationSeconds not yet expired": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, noSel, 601)}},
			want: []string{"gpu"},
		},
		"tolerationSeconds expired": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, noSel, 600)}},
			want:        []string{},
			wantReasons: map[string]string{"gpu": "toleration for taint gpu=maintenance:NoSelect expired at 2025-06-01T12:00:00Z"},
		},
		"a permanent toleration wins over an expired one": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{
					st.MakeToleration("gpu", exists, noValue, noSel, 60),
					st.MakeToleration("gpu", equal, "maintenance", noSel),
				}},
			want: []string{"gpu"},
		},
		"only candidates are returned": {
			fixture:    fixture{clusters: []*clusterv1.ManagedCluster{plain, gpuCluster(prefer)}},
			candidates: []string{"gpu"},
			want:       []string{"gpu"},
		},
		"empty key requires Exists": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{plain},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("", equal, "x", noSel)}},
			wantStatus: "Misconfigured: If the key is empty, operator must be Exists.",
		},
		"empty key and empty operator is invalid": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{plain},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("", "", "", "")}},
			wantStatus: "Misconfigured: If the key is empty, operator must be Exists.",
		},
		"Exists with a value is invalid": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{plain},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, "x", noSel)}},
			wantStatus: "Misconfigured: If the operator is Exists, the value should be empty.",
		},
		"no candidates are not validated, as in OCM": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{plain},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, "x", noSel)}},
			candidates: []string{},
			want:       []string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap, req := tc.build()
			candidates := framework.NewFullBitset(snap.NumClusters())
			if tc.candidates != nil {
				candidates = snap.BitsetOf(tc.candidates)
			}
			p := newPlugin(t)
			got, status := p.Filter(t.Context(), framework.NewCycleState(), snap, req, candidates, nil)
			if diff := cmp.Diff(tc.wantStatus, statusString(status)); diff != "" {
				t.Fatalf("status (-want,+got):\n%s", diff)
			}
			if tc.wantStatus != "" {
				return
			}
			if diff := cmp.Diff(tc.want, names(snap, got)); diff != "" {
				t.Errorf("selected (-want,+got):\n%s", diff)
			}
			rec := &reasons{snap: snap, got: map[string]string{}}
			explained, _ := p.Filter(t.Context(), framework.NewCycleState(), snap, req, candidates, rec)
			if diff := cmp.Diff(tc.want, names(snap, explained)); diff != "" {
				t.Errorf("selected with explain (-want,+got):\n%s", diff)
			}
			wantReasons := tc.wantReasons
			if wantReasons == nil {
				wantReasons = map[string]string{}
			}
			if diff := cmp.Diff(wantReasons, rec.got); diff != "" {
				t.Errorf("reasons (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestRequeueAfter(t *testing.T) {
	tolerate := func(seconds int64) clusterv1beta1.Toleration {
		return st.MakeToleration("gpu", exists, noValue, "", seconds)
	}
	tests := map[string]struct {
		fixture
		want time.Duration
	}{
		"no taints": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{st.MakeCluster("c1").Obj()}, decided: []string{"c1"}},
		},
		"permanent toleration": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)}, decided: []string{"gpu"},
				tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, noSel)}},
		},
		"decided cluster tolerated for a while": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)}, decided: []string{"gpu"},
				tolerations: []clusterv1beta1.Toleration{tolerate(900)}},
			want: 5 * time.Minute,
		},
		"earliest expiry among decided clusters": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{
				st.MakeCluster("a").Taint("gpu", "x", noSel, now.Add(-time.Minute)).Obj(),
				st.MakeCluster("b").Taint("gpu", "y", noSel, now.Add(-8*time.Minute)).Obj(),
				st.MakeCluster("c").Taint("gpu", "z", noSel, now.Add(-9*time.Minute)).Obj(),
			}, decided: []string{"a", "b"}, tolerations: []clusterv1beta1.Toleration{tolerate(600)}},
			want: 2 * time.Minute,
		},
		"undecided clusters do not requeue": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)},
				tolerations: []clusterv1beta1.Toleration{tolerate(900)}},
		},
		"expired toleration does not requeue": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(noSel)}, decided: []string{"gpu"},
				tolerations: []clusterv1beta1.Toleration{tolerate(600)}},
		},
		"decided NoSelectIfNew cluster needs no toleration": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(ifNew)}, decided: []string{"gpu"},
				tolerations: []clusterv1beta1.Toleration{tolerate(900)}},
		},
		"PreferNoSelect does not requeue": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{gpuCluster(prefer)}, decided: []string{"gpu"},
				tolerations: []clusterv1beta1.Toleration{tolerate(900)}},
		},
		"a cluster with an untolerated taint does not requeue": {
			fixture: fixture{clusters: []*clusterv1.ManagedCluster{
				st.MakeCluster("c1").Taint("gpu", "x", noSel, added).Taint("disk", "", noSel, added).Obj(),
			}, decided: []string{"c1"}, tolerations: []clusterv1beta1.Toleration{tolerate(900)}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap, req := tc.build()
			got := newPlugin(t).RequeueAfter(t.Context(), framework.NewCycleState(), snap, req)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RequeueAfter (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestScore(t *testing.T) {
	clusters := []*clusterv1.ManagedCluster{
		st.MakeCluster("plain").Obj(),
		st.MakeCluster("prefer").Taint("gpu", "maintenance", prefer, added).Obj(),
		st.MakeCluster("noselect").Taint("gpu", "maintenance", noSel, added).Obj(),
		st.MakeCluster("infeasible").Taint("gpu", "maintenance", prefer, added).Obj(),
	}
	feasible := []string{"plain", "prefer", "noselect"}
	tests := map[string]struct {
		tolerations []clusterv1beta1.Toleration
		want        map[string]int64
	}{
		"untolerated PreferNoSelect gets the lowest score": {
			want: map[string]int64{"plain": 0, "prefer": -100, "noselect": 0, "infeasible": 0},
		},
		"tolerated PreferNoSelect is not penalised": {
			tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, prefer)},
			want:        map[string]int64{"plain": 0, "prefer": 0, "noselect": 0, "infeasible": 0},
		},
		"temporarily tolerated PreferNoSelect is not penalised": {
			tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, prefer, 3600)},
			want:        map[string]int64{"plain": 0, "prefer": 0, "noselect": 0, "infeasible": 0},
		},
		"expired toleration of PreferNoSelect is penalised": {
			tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, prefer, 60)},
			want:        map[string]int64{"plain": 0, "prefer": -100, "noselect": 0, "infeasible": 0},
		},
		"toleration of another effect does not help": {
			tolerations: []clusterv1beta1.Toleration{st.MakeToleration("gpu", exists, noValue, noSel)},
			want:        map[string]int64{"plain": 0, "prefer": -100, "noselect": 0, "infeasible": 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap, req := fixture{clusters: clusters, tolerations: tc.tolerations}.build()
			scores := make([]int64, snap.NumClusters())
			if status := newPlugin(t).Score(t.Context(), framework.NewCycleState(), snap, req, snap.BitsetOf(feasible), scores); !status.IsSuccess() {
				t.Fatalf("Score: %v", status)
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

func TestNewRefusesArgs(t *testing.T) {
	if _, err := New(nil, framework.Args{Param: "x"}); err == nil {
		t.Error("New with a parameter succeeded, want an error")
	}
}

func statusString(s *framework.Status) string {
	if s.IsSuccess() {
		return ""
	}
	return s.Code().String() + ": " + s.Message()
}

func names(snap *framework.Snapshot, b *framework.Bitset) []string {
	out := []string{}
	b.ForEach(func(i int) { out = append(out, snap.Cluster(i).Name()) })
	return out
}
