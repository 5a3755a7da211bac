package predicate

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// reasons records rejections by cluster name.
type reasons struct {
	snap *framework.Snapshot
	got  map[string]string
}

func (r *reasons) Reject(i int, reason string) { r.got[r.snap.Cluster(i).Name()] = reason }

func testFleet() cachetest.Fleet {
	return cachetest.Fleet{
		Clusters: []*clusterv1.ManagedCluster{
			st.MakeCluster("c1").Label("env", "prod").Label("version", "1.30").Claim("region", "us-east").KubeVersion("v1.30.2").Obj(),
			st.MakeCluster("c2").Label("env", "dev").Label("version", "1.28").Claim("region", "eu-west").KubeVersion("v1.28.0").Obj(),
			st.MakeCluster("c3").Label("env", "prod").KubeVersion("v1.29.1").Obj(),
		},
		Scores: []*clusterv1alpha1.AddOnPlacementScore{
			st.MakeScore("c1", "res", nil, map[string]int32{"cpu": 5, "memory": 1}),
			st.MakeScore("c2", "res", nil, map[string]int32{"cpu": 2, "memory": 9}),
		},
	}
}

func newPlugin(t testing.TB, f cachetest.Fleet) *Predicate {
	t.Helper()
	p, err := New(scheduler.NewHandle(clocktesting.NewFakePassiveClock(now), f.ScoreLister()), framework.Args{})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Predicate)
}

func TestFilter(t *testing.T) {
	all := []string{"c1", "c2", "c3"}
	tests := map[string]struct {
		placement  *st.PlacementWrapper
		candidates []string
		want       []string
		// wantReasons holds the rejection reason of every rejected candidate.
		wantReasons map[string]string
		wantStatus  string
	}{
		"no predicates selects every candidate": {
			placement: st.MakePlacement("p", "ns"),
			want:      all,
		},
		"only candidates are returned": {
			placement:  st.MakePlacement("p", "ns"),
			candidates: []string{"c2"},
			want:       []string{"c2"},
		},
		"label selector": {
			placement:   st.MakePlacement("p", "ns").PredicateLabels(map[string]string{"env": "prod"}),
			want:        []string{"c1", "c3"},
			wantReasons: map[string]string{"c2": `no predicate matches: labels do not match "env=prod"`},
		},
		"claim selector": {
			placement: st.MakePlacement("p", "ns").PredicateClaims(metav1.LabelSelectorRequirement{
				Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"us-east", "us-west"}}),
			want: []string{"c1"},
			wantReasons: map[string]string{
				"c2": `no predicate matches: claims do not match "region in (us-east,us-west)"`,
				"c3": `no predicate matches: claims do not match "region in (us-east,us-west)"`,
			},
		},
		"claim selector does not read labels": {
			placement: st.MakePlacement("p", "ns").PredicateClaims(metav1.LabelSelectorRequirement{
				Key: "env", Operator: metav1.LabelSelectorOpExists}),
			want: []string{},
			wantReasons: map[string]string{
				"c1": `no predicate matches: claims do not match "env"`,
				"c2": `no predicate matches: claims do not match "env"`,
				"c3": `no predicate matches: claims do not match "env"`,
			},
		},
		"labels and claims of one predicate are ANDed": {
			placement: st.MakePlacement("p", "ns").Predicate(clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
				ClaimSelector: clusterv1beta1.ClusterClaimSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu-west"}}}},
			}),
			want: []string{},
			wantReasons: map[string]string{
				"c1": `no predicate matches: claims do not match "region in (eu-west)"`,
				"c2": `no predicate matches: labels do not match "env=prod"`,
				"c3": `no predicate matches: claims do not match "region in (eu-west)"`,
			},
		},
		"predicates are ORed": {
			placement: st.MakePlacement("p", "ns").
				PredicateLabels(map[string]string{"env": "dev"}).
				PredicateClaims(metav1.LabelSelectorRequirement{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"us-east"}}),
			want: []string{"c1", "c2"},
			wantReasons: map[string]string{
				"c3": `no predicate matches: labels do not match "env=dev"; claims do not match "region in (us-east)"`,
			},
		},
		"CEL on labels": {
			placement:   st.MakePlacement("p", "ns").PredicateCEL(`managedCluster.metadata.labels["version"] == "1.30"`),
			want:        []string{"c1"},
			wantReasons: map[string]string{"c2": `no predicate matches: CEL expression "managedCluster.metadata.labels[\"version\"] == \"1.30\"" is false`, "c3": `no predicate matches: CEL expression "managedCluster.metadata.labels[\"version\"] == \"1.30\"" failed: no such key: version`},
		},
		"CEL on the Kubernetes version as a string": {
			placement: st.MakePlacement("p", "ns").PredicateCEL(`managedCluster.status.version.kubernetes == "v1.28.0"`),
			want:      []string{"c2"},
			wantReasons: map[string]string{
				"c1": `no predicate matches: CEL expression "managedCluster.status.version.kubernetes == \"v1.28.0\"" is false`,
				"c3": `no predicate matches: CEL expression "managedCluster.status.version.kubernetes == \"v1.28.0\"" is false`,
			},
		},
		"CEL on the Kubernetes version as a semver": {
			placement: st.MakePlacement("p", "ns").PredicateCEL(`semver(managedCluster.status.version.kubernetes.substring(1)).isGreaterThan(semver("1.29.0"))`),
			want:      []string{"c1", "c3"},
			wantReasons: map[string]string{
				"c2": `no predicate matches: CEL expression "semver(managedCluster.status.version.kubernetes.substring(1)).isGreaterThan(semver(\"1.29.0\"))" is false`,
			},
		},
		"CEL on AddOnPlacementScores": {
			placement: st.MakePlacement("p", "ns").PredicateCEL(`managedCluster.scores("res").filter(s, s.name == "cpu").all(e, e.value > 3)`),
			want:      []string{"c1"},
			wantReasons: map[string]string{
				"c2": `no predicate matches: CEL expression "managedCluster.scores(\"res\").filter(s, s.name == \"cpu\").all(e, e.value > 3)" is false`,
				"c3": `no predicate matches: CEL expression "managedCluster.scores(\"res\").filter(s, s.name == \"cpu\").all(e, e.value > 3)" failed: failed to get score: addonplacementscore.cluster.open-cluster-management.io "res" not found`,
			},
		},
		"CEL expressions of one predicate are ANDed": {
			placement: st.MakePlacement("p", "ns").PredicateCEL(
				`managedCluster.metadata.labels["env"] == "prod"`,
				`managedCluster.status.version.kubernetes.startsWith("v1.29")`),
			want: []string{"c3"},
			wantReasons: map[string]string{
				"c1": `no predicate matches: CEL expression "managedCluster.status.version.kubernetes.startsWith(\"v1.29\")" is false`,
				"c2": `no predicate matches: CEL expression "managedCluster.metadata.labels[\"env\"] == \"prod\"" is false`,
			},
		},
		"labels and CEL of one predicate are ANDed": {
			placement: st.MakePlacement("p", "ns").Predicate(clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
				CelSelector:   clusterv1beta1.ClusterCelSelector{CelExpressions: []string{`managedCluster.scores("res").exists(s, s.name == "cpu")`}},
			}),
			want: []string{"c1"},
			wantReasons: map[string]string{
				"c2": `no predicate matches: labels do not match "env=prod"`,
				"c3": `no predicate matches: CEL expression "managedCluster.scores(\"res\").exists(s, s.name == \"cpu\")" failed: failed to get score: addonplacementscore.cluster.open-cluster-management.io "res" not found`,
			},
		},
		"CEL predicate ORed with a label predicate": {
			placement: st.MakePlacement("p", "ns").
				PredicateCEL(`managedCluster.metadata.name == "c2"`).
				PredicateLabels(map[string]string{"version": "1.30"}),
			want: []string{"c1", "c2"},
			wantReasons: map[string]string{
				"c3": `no predicate matches: CEL expression "managedCluster.metadata.name == \"c2\"" is false; labels do not match "version=1.30"`,
			},
		},
		"CEL expression that is not a bool rejects every cluster": {
			placement: st.MakePlacement("p", "ns").PredicateCEL(`managedCluster.metadata.name`),
			want:      []string{},
			wantReasons: map[string]string{
				"c1": `no predicate matches: CEL expression "managedCluster.metadata.name" is not a bool but string`,
				"c2": `no predicate matches: CEL expression "managedCluster.metadata.name" is not a bool but string`,
				"c3": `no predicate matches: CEL expression "managedCluster.metadata.name" is not a bool but string`,
			},
		},
		"CEL expression that fails for one cluster rejects only that cluster": {
			placement: st.MakePlacement("p", "ns").PredicateCEL(`managedCluster.status.clusterClaims[0].value != ""`),
			want:      []string{"c1", "c2"},
			wantReasons: map[string]string{
				"c3": `no predicate matches: CEL expression "managedCluster.status.clusterClaims[0].value != \"\"" failed: no such key: clusterClaims`,
			},
		},
		"invalid label selector is a misconfiguration": {
			placement: st.MakePlacement("p", "ns").Predicate(clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpIn}}}}),
			wantStatus: `Misconfigured: values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty`,
		},
		"invalid claim selector is a misconfiguration": {
			placement: st.MakePlacement("p", "ns").PredicateClaims(metav1.LabelSelectorRequirement{
				Key: "region", Operator: metav1.LabelSelectorOpExists, Values: []string{"eu"}}),
			wantStatus: `Misconfigured: values: Invalid value: ["eu"]: values set must be empty for exists and does not exist`,
		},
		"CEL syntax error is a misconfiguration": {
			placement: st.MakePlacement("p", "ns").PredicateLabels(map[string]string{"env": "prod"}).PredicateCEL(`managedCluster.metadata.name ==`),
			wantStatus: "Misconfigured: compilation failed: ERROR: <input>:1:32: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n" +
				" | managedCluster.metadata.name ==\n" +
				" | ...............................^",
		},
		"CEL undeclared reference is a misconfiguration": {
			placement: st.MakePlacement("p", "ns").PredicateCEL(`cluster.metadata.name == "c1"`),
			wantStatus: "Misconfigured: compilation failed: ERROR: <input>:1:1: undeclared reference to 'cluster' (in container '')\n" +
				" | cluster.metadata.name == \"c1\"\n" +
				" | ^",
		},
		"no candidates are not validated, as in OCM": {
			placement:  st.MakePlacement("p", "ns").PredicateCEL(`managedCluster.metadata.name ==`),
			candidates: []string{},
			want:       []string{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := testFleet()
			snap := f.Snapshot()
			p := newPlugin(t, f)
			candidates := framework.NewFullBitset(snap.NumClusters())
			if tc.candidates != nil {
				candidates = snap.BitsetOf(tc.candidates)
			}
			req := &framework.Request{Placement: tc.placement.Obj(), Decided: framework.NewBitset(snap.NumClusters()), Now: now}

			// Without explain.
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

			// With explain: same result, plus the reasons.
			rec := &reasons{snap: snap, got: map[string]string{}}
			explained, status := p.Filter(t.Context(), framework.NewCycleState(), snap, req, candidates, rec)
			if !status.IsSuccess() {
				t.Fatalf("explained Filter: %v", status)
			}
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

// TestFilterCaches checks that the caches follow changes: a placement whose expressions change
// within a generation, and a cluster whose labels change with its resourceVersion.
func TestFilterCaches(t *testing.T) {
	f := testFleet()
	p := newPlugin(t, f)
	run := func(snap *framework.Snapshot, pl *clusterv1beta1.Placement) []string {
		t.Helper()
		req := &framework.Request{Placement: pl, Decided: framework.NewBitset(snap.NumClusters()), Now: now}
		got, status := p.Filter(t.Context(), framework.NewCycleState(), snap, req, framework.NewFullBitset(snap.NumClusters()), nil)
		if !status.IsSuccess() {
			t.Fatalf("Filter: %v", status)
		}
		return names(snap, got)
	}
	snap := f.Snapshot()
	pl := st.MakePlacement("p", "ns").UID("u1").Generation(1).PredicateCEL(`managedCluster.metadata.labels["env"] == "prod"`)
	if diff := cmp.Diff([]string{"c1", "c3"}, run(snap, pl.Obj())); diff != "" {
		t.Errorf("first cycle (-want,+got):\n%s", diff)
	}
	changed := pl.Clone()
	changed.Spec.Predicates[0].RequiredClusterSelector.CelSelector.CelExpressions = []string{`managedCluster.metadata.labels["env"] == "dev"`}
	if diff := cmp.Diff([]string{"c2"}, run(snap, changed.Obj())); diff != "" {
		t.Errorf("expressions changed in the same generation (-want,+got):\n%s", diff)
	}

	f.Clusters[1] = st.MakeCluster("c2").Label("env", "dev").ResourceVersion("1").Obj()
	if diff := cmp.Diff([]string{"c2"}, run(f.Snapshot(), changed.Obj())); diff != "" {
		t.Errorf("resourceVersion 1 (-want,+got):\n%s", diff)
	}
	f.Clusters[1] = st.MakeCluster("c2").Label("env", "prod").ResourceVersion("2").Obj()
	if diff := cmp.Diff([]string{}, run(f.Snapshot(), changed.Obj())); diff != "" {
		t.Errorf("resourceVersion 2 (-want,+got):\n%s", diff)
	}
}

// TestFilterConcurrent runs placements with label and CEL predicates concurrently on one plugin
// instance; run it with -race.
func TestFilterConcurrent(t *testing.T) {
	f := testFleet()
	snap := f.Snapshot()
	p := newPlugin(t, f)
	placements := map[string]*clusterv1beta1.Placement{}
	want := map[string][]string{}
	for i := range 8 {
		name := fmt.Sprintf("p%d", i)
		if i%2 == 0 {
			placements[name] = st.MakePlacement(name, "ns").UID(name).PredicateCEL(`managedCluster.scores("res").exists(s, s.name == "memory" && s.value > 5)`).Obj()
			want[name] = []string{"c2"}
		} else {
			placements[name] = st.MakePlacement(name, "ns").UID(name).PredicateLabels(map[string]string{"env": "prod"}).Obj()
			want[name] = []string{"c1", "c3"}
		}
	}
	var mu sync.Mutex
	got := map[string][]string{}
	var wg sync.WaitGroup
	for name, pl := range placements {
		for range 4 {
			wg.Go(func() {
				req := &framework.Request{Placement: pl, Decided: framework.NewBitset(snap.NumClusters()), Now: now}
				out, status := p.Filter(t.Context(), framework.NewCycleState(), snap, req, framework.NewFullBitset(snap.NumClusters()), nil)
				if !status.IsSuccess() {
					t.Errorf("Filter %s: %v", name, status)
					return
				}
				mu.Lock()
				got[name] = names(snap, out)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("selected (-want,+got):\n%s", diff)
	}
}

func TestNewRefusesArgs(t *testing.T) {
	if _, err := New(scheduler.NewHandle(clocktesting.NewFakePassiveClock(now), nil), framework.Args{Param: "x"}); err == nil {
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
