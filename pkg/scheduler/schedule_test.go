package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// ocmDefaults are OCM's default prioritizers of the Additive mode.
var ocmDefaults = scheduler.Weights{Defaults: []scheduler.WeightedPlugin{{Name: "Balance", Weight: 1}, {Name: "Steady", Weight: 1}}}

// testFleet has six clusters in the set "default", bound to namespace ns:
//
//	cluster  region  tier    zone claim  cpu  addon demo/score
//	c1       r1      gold    z1          10   10
//	c2       r1      gold    z2          20   20
//	c3       r2      gold    z1          30   30
//	c4       r2      gold    z2          10   40
//	c5       r3      gold    -           20   50
//	c6       r3      silver  -           30   60
//
// ns/p (the placement under test) decides c2 and ns/other decides c1, so with the default
// prioritizers Balance gives c1 -100 and the others 100, and Steady gives c2 100.
func testFleet(scores ...*clusterv1alpha1.AddOnPlacementScore) cachetest.Fleet {
	type row struct{ name, region, tier, zone, cpu string }
	rows := []row{
		{"c1", "r1", "gold", "z1", "10"},
		{"c2", "r1", "gold", "z2", "20"},
		{"c3", "r2", "gold", "z1", "30"},
		{"c4", "r2", "gold", "z2", "10"},
		{"c5", "r3", "gold", "", "20"},
		{"c6", "r3", "silver", "", "30"},
	}
	f := cachetest.Fleet{
		Sets:     []*clusterv1beta2.ManagedClusterSet{st.MakeExclusiveClusterSet("default")},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.MakeClusterSetBinding("ns", "default")},
		Decided:  map[string][]string{"ns/p": {"c2"}, "ns/other": {"c1"}},
	}
	for k, r := range rows {
		c := st.MakeCluster(r.name).Label("region", r.region).Label("tier", r.tier).Resource(clusterv1.ResourceCPU, r.cpu, r.cpu)
		if r.zone != "" {
			c.Claim("zone", r.zone)
		}
		f.Clusters = append(f.Clusters, c.Obj())
		f.Scores = append(f.Scores, st.MakeScore(r.name, "demo", nil, map[string]int32{"score": int32(10 * (k + 1))}))
	}
	// Extra scores replace the defaults of their cluster.
	for _, s := range scores {
		for k := range f.Scores {
			if f.Scores[k].Namespace == s.Namespace && f.Scores[k].Name == s.Name {
				f.Scores[k] = s
			}
		}
	}
	return f
}

type decision = scheduler.Decision

// decisions builds the expected decisions from alternating names and scores.
func decisions(pairs ...any) []decision {
	var out []decision
	for k := 0; k < len(pairs); k += 2 {
		out = append(out, decision{ClusterName: pairs[k].(string), Score: int64(pairs[k+1].(int))})
	}
	return out
}

func TestSchedule(t *testing.T) {
	expired := now.Add(-time.Minute)
	placement := func() *st.PlacementWrapper { return st.MakePlacement("p", "ns") }
	tests := map[string]struct {
		placement *st.PlacementWrapper
		weights   *scheduler.Weights
		scores    []*clusterv1alpha1.AddOnPlacementScore
		want      []decision
		// wantPrioritizers are the names and weights of the prioritizers that ran.
		wantPrioritizers []string
		wantCode         framework.Code
		wantMessage      string
		wantUnscheduled  int
	}{
		"additive defaults: Balance and Steady": {
			placement:        placement(),
			want:             decisions("c2", 200, "c3", 100, "c4", 100, "c5", 100, "c6", 100, "c1", -100),
			wantPrioritizers: []string{"Balance(1)", "Steady(1)"},
		},
		"additive: a configured prioritizer adds to the defaults": {
			placement: placement().BuiltIn("ResourceAllocatableCPU", 1),
			// cpu scores: c1 -100, c2 0, c3 100, c4 -100, c5 0, c6 100.
			want:             decisions("c2", 200, "c3", 200, "c6", 200, "c5", 100, "c4", 0, "c1", -200),
			wantPrioritizers: []string{"Balance(1)", "Steady(1)", "ResourceAllocatableCPU(1)"},
		},
		"additive: configuring a default overrides its weight in place": {
			placement:        placement().BuiltIn("Steady", 3),
			want:             decisions("c2", 400, "c3", 100, "c4", 100, "c5", 100, "c6", 100, "c1", -100),
			wantPrioritizers: []string{"Balance(1)", "Steady(3)"},
		},
		"additive without defaults in the profile": {
			placement:        placement().BuiltIn("ResourceAllocatableCPU", 1),
			weights:          &scheduler.Weights{},
			want:             decisions("c3", 100, "c6", 100, "c2", 0, "c5", 0, "c1", -100, "c4", -100),
			wantPrioritizers: []string{"ResourceAllocatableCPU(1)"},
		},
		"exact: only the configured prioritizers": {
			placement:        placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("ResourceAllocatableCPU", 1),
			want:             decisions("c3", 100, "c6", 100, "c2", 0, "c5", 0, "c1", -100, "c4", -100),
			wantPrioritizers: []string{"ResourceAllocatableCPU(1)"},
		},
		"exact with no configuration: every cluster ties at 0, by name": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact),
			want:      decisions("c1", 0, "c2", 0, "c3", 0, "c4", 0, "c5", 0, "c6", 0),
		},
		"weights combine, including a negative one": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).
				AddOn("demo", "score", 2).BuiltIn("ResourceAllocatableCPU", -1),
			// 2*addon - cpu.
			want:             decisions("c4", 180, "c1", 120, "c5", 100, "c2", 40, "c6", 20, "c3", -40),
			wantPrioritizers: []string{"AddOn/demo/score(2)", "ResourceAllocatableCPU(-1)"},
		},
		"weight 10": {
			placement:        placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 10),
			want:             decisions("c6", 600, "c5", 500, "c4", 400, "c3", 300, "c2", 200, "c1", 100),
			wantPrioritizers: []string{"AddOn/demo/score(10)"},
		},
		"weight -10 reverses the order": {
			placement:        placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", -10),
			want:             decisions("c1", -100, "c2", -200, "c3", -300, "c4", -400, "c5", -500, "c6", -600),
			wantPrioritizers: []string{"AddOn/demo/score(-10)"},
		},
		"weight 0 disables a default": {
			placement:        placement().BuiltIn("Balance", 0),
			want:             decisions("c2", 100, "c1", 0, "c3", 0, "c4", 0, "c5", 0, "c6", 0),
			wantPrioritizers: []string{"Steady(1)"},
		},
		"weight 0 disables a configured prioritizer": {
			placement:        placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 0).BuiltIn("Steady", 1),
			want:             decisions("c2", 100, "c1", 0, "c3", 0, "c4", 0, "c5", 0, "c6", 0),
			wantPrioritizers: []string{"Steady(1)"},
		},
		"add-on scores out of range are clamped": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1),
			scores: []*clusterv1alpha1.AddOnPlacementScore{
				st.MakeScore("c1", "demo", nil, map[string]int32{"score": 1000}),
				st.MakeScore("c2", "demo", nil, map[string]int32{"score": -1000}),
			},
			want:             decisions("c1", 100, "c6", 60, "c5", 50, "c4", 40, "c3", 30, "c2", -100),
			wantPrioritizers: []string{"AddOn/demo/score(1)"},
		},
		"an expired add-on score warns and scores 0": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1).NumberOfClusters(2),
			scores: []*clusterv1alpha1.AddOnPlacementScore{
				st.MakeScore("c6", "demo", &expired, map[string]int32{"score": 60}),
			},
			want:             decisions("c5", 50, "c4", 40),
			wantPrioritizers: []string{"AddOn/demo/score(1)"},
			wantCode:         framework.Warning,
			wantMessage:      "AddOnPlacementScores c6/demo expired",
		},
		"unknown builtIn": {
			placement:   placement().BuiltIn("Bogus", 1),
			wantCode:    framework.Misconfigured,
			wantMessage: "incorrect builtin prioritizer: Bogus",
		},
		"unknown builtIn with a parameter": {
			placement:   placement().BuiltIn("Bogus:x", 1),
			wantCode:    framework.Misconfigured,
			wantMessage: "incorrect builtin prioritizer: Bogus:x",
		},
		"unknown mode": {
			placement:   placement().Mode("Bogus"),
			wantCode:    framework.Misconfigured,
			wantMessage: "incorrect prioritizer policy mode: Bogus",
		},
		"a parameterised prioritizer without its parameter": {
			placement:   placement().BuiltIn("ResourceAllocatable", 1),
			wantCode:    framework.Misconfigured,
			wantMessage: "prioritizer ResourceAllocatable: ResourceAllocatable needs a resource name, as in ResourceAllocatable:nvidia.com/gpu",
		},
		"a parameterised prioritizer": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("ResourceAllocatable:cpu", 1).NumberOfClusters(2),
			want:      decisions("c3", 100, "c6", 100),
			// The parameter is part of the name.
			wantPrioritizers: []string{"ResourceAllocatable:cpu(1)"},
		},
		"numberOfClusters truncates, ties broken by name": {
			placement:        placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("ResourceAllocatableCPU", 1).NumberOfClusters(3),
			want:             decisions("c3", 100, "c6", 100, "c2", 0),
			wantPrioritizers: []string{"ResourceAllocatableCPU(1)"},
		},
		"numberOfClusters 0": {
			placement:        placement().NumberOfClusters(0),
			wantPrioritizers: []string{"Balance(1)", "Steady(1)"},
		},
		"numberOfClusters larger than the fleet": {
			placement:        placement().NumberOfClusters(10),
			want:             decisions("c2", 200, "c3", 100, "c4", 100, "c5", 100, "c6", 100, "c1", -100),
			wantPrioritizers: []string{"Balance(1)", "Steady(1)"},
			wantUnscheduled:  4,
		},
		"negative numberOfClusters": {
			placement:        placement().NumberOfClusters(-1),
			wantPrioritizers: []string{"Balance(1)", "Steady(1)"},
			wantCode:         framework.Misconfigured,
			wantMessage:      "numberOfClusters must not be negative, got -1",
		},
		"spread DoNotSchedule, maxSkew 1 over 3 regions": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1).
				NumberOfClusters(3).Spread("region", clusterv1beta1.TopologyKeyTypeLabel, 1, clusterv1beta1.DoNotSchedule),
			// c5 (r3) would make r3 two ahead of r1; c3 (r2) likewise.
			want:             decisions("c6", 60, "c4", 40, "c2", 20),
			wantPrioritizers: []string{"AddOn/demo/score(1)"},
		},
		"spread DoNotSchedule, maxSkew 1, second round": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1).
				NumberOfClusters(5).Spread("region", clusterv1beta1.TopologyKeyTypeLabel, 1, clusterv1beta1.DoNotSchedule),
			want:             decisions("c6", 60, "c4", 40, "c2", 20, "c5", 50, "c3", 30),
			wantPrioritizers: []string{"AddOn/demo/score(1)"},
		},
		"spread DoNotSchedule cannot keep the skew: fewer clusters": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1).
				NumberOfClusters(4).Spread("tier", clusterv1beta1.TopologyKeyTypeLabel, 1, clusterv1beta1.DoNotSchedule),
			// One silver cluster allows at most two gold ones.
			want:             decisions("c6", 60, "c5", 50, "c4", 40),
			wantPrioritizers: []string{"AddOn/demo/score(1)"},
			wantUnscheduled:  1,
		},
		"spread ScheduleAnyway falls back to the best cluster": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1).
				NumberOfClusters(4).Spread("tier", clusterv1beta1.TopologyKeyTypeLabel, 1, clusterv1beta1.ScheduleAnyway),
			want:             decisions("c6", 60, "c5", 50, "c4", 40, "c3", 30),
			wantPrioritizers: []string{"AddOn/demo/score(1)"},
		},
		"spread over a claim: clusters without the claim are not selected": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1).
				NumberOfClusters(3).Spread("zone", clusterv1beta1.TopologyKeyTypeClaim, 1, clusterv1beta1.DoNotSchedule),
			want:             decisions("c4", 40, "c3", 30, "c2", 20),
			wantPrioritizers: []string{"AddOn/demo/score(1)"},
		},
		"spread over a claim, ScheduleAnyway: clusters without the claim are allowed": {
			placement: placement().Mode(clusterv1beta1.PrioritizerPolicyModeExact).AddOn("demo", "score", 1).
				NumberOfClusters(3).Spread("zone", clusterv1beta1.TopologyKeyTypeClaim, 1, clusterv1beta1.ScheduleAnyway),
			want:             decisions("c6", 60, "c5", 50, "c4", 40),
			wantPrioritizers: []string{"AddOn/demo/score(1)"},
		},
		"spread with an invalid topologyKeyType": {
			placement: placement().NumberOfClusters(3).Spread("zone", "Bogus", 1, clusterv1beta1.DoNotSchedule),
			wantCode:  framework.Misconfigured,
			// The prioritizers ran before the selection failed.
			wantPrioritizers: []string{"Balance(1)", "Steady(1)"},
			wantMessage:      `spreadConstraints: topologyKeyType must be Label or Claim, not "Bogus"`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			fleet := testFleet(tc.scores...)
			weights := ocmDefaults
			if tc.weights != nil {
				weights = *tc.weights
			}
			s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), fleet.ScoreLister()),
				plugins.NewRegistry(), scheduler.Profile{Weights: weights})
			if err != nil {
				t.Fatal(err)
			}
			snap := fleet.Snapshot()
			p := tc.placement.Obj()
			req := &framework.Request{Placement: p, Decided: snap.BitsetOf(snap.DecidedNames(p.Namespace + "/" + p.Name)), Now: now}
			res := s.Schedule(t.Context(), snap, req, scheduler.Options{})

			if diff := cmp.Diff(tc.wantCode.String(), res.Status.Code().String()); diff != "" {
				t.Errorf("status code (-want,+got):\n%s\nstatus: %v", diff, res.Status)
			}
			if diff := cmp.Diff(tc.wantMessage, res.Status.Message()); diff != "" {
				t.Errorf("status message (-want,+got):\n%s", diff)
			}
			if res.Failed() {
				if got := res.Decisions(); len(got) != 0 {
					t.Errorf("a failed cycle selected %v", got)
				}
			}
			if diff := cmp.Diff(tc.want, res.Decisions(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s", diff)
			}
			var prioritizers []string
			for _, pr := range res.Prioritizers {
				prioritizers = append(prioritizers, fmt.Sprintf("%s(%d)", pr.Name, pr.Weight))
			}
			if diff := cmp.Diff(tc.wantPrioritizers, prioritizers); diff != "" {
				t.Errorf("prioritizers (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnscheduled, res.Unscheduled); diff != "" {
				t.Errorf("unscheduled (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestScheduleExplain checks that explain records each prioritizer's raw scores by cluster.
func TestScheduleExplain(t *testing.T) {
	fleet := testFleet()
	s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), fleet.ScoreLister()),
		plugins.NewRegistry(), scheduler.Profile{Weights: ocmDefaults})
	if err != nil {
		t.Fatal(err)
	}
	snap := fleet.Snapshot()
	p := st.MakePlacement("p", "ns").AddOn("demo", "score", -2).Obj()
	res := s.Schedule(t.Context(), snap, &framework.Request{Placement: p, Decided: snap.BitsetOf([]string{"c2"}), Now: now}, scheduler.Options{Explain: true})
	res.Materialize()
	got := map[string]map[string]int64{}
	for _, pr := range res.Prioritizers {
		got[pr.Name] = pr.Scores
	}
	want := map[string]map[string]int64{
		"Balance":          {"c1": -100, "c2": 100, "c3": 100, "c4": 100, "c5": 100, "c6": 100},
		"Steady":           {"c1": 0, "c2": 100, "c3": 0, "c4": 0, "c5": 0, "c6": 0},
		"AddOn/demo/score": {"c1": 10, "c2": 20, "c3": 30, "c4": 40, "c5": 50, "c6": 60},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prioritizer scores (-want,+got):\n%s", diff)
	}
	wantTotals := map[string]int64{"c1": -120, "c2": 160, "c3": 40, "c4": 20, "c5": 0, "c6": -20}
	if diff := cmp.Diff(wantTotals, res.Totals()); diff != "" {
		t.Errorf("totals (-want,+got):\n%s", diff)
	}
}

// TestExplainNotesStaleInventories: explain notes each cluster whose inventory is too old for
// new decisions, and only those.
func TestExplainNotesStaleInventories(t *testing.T) {
	fleet := testFleet()
	node := st.MakeNode("n").Resource(corev1.ResourceCPU, "8").Obj()
	fleet.Inventories = []*fleetfitv1alpha1.ClusterInventory{
		st.MakeInventory("c1", now.Add(-time.Minute), []*corev1.Node{node}),
		st.MakeInventory("c2", now.Add(-time.Hour), []*corev1.Node{node}),
	}
	s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), fleet.ScoreLister()),
		plugins.NewRegistry(), scheduler.Profile{Weights: ocmDefaults})
	if err != nil {
		t.Fatal(err)
	}
	snap := fleet.Snapshot()
	p := st.MakePlacement("p", "ns").Obj()
	res := s.Schedule(t.Context(), snap, &framework.Request{Placement: p, Decided: snap.BitsetOf([]string{"c2"}), Now: now}, scheduler.Options{Explain: true})
	got := map[string]string{}
	for _, c := range scheduler.Explain("ns/p", res).Clusters {
		if c.Note != "" {
			got[c.Name] = c.Note
		}
	}
	want := map[string]string{"c2": "ClusterInventory is 1h0m0s old (stale after 10m0s): no new decisions onto this cluster until its agent reports again; existing ones are kept"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes (-want,+got):\n%s", diff)
	}
}

// TestScheduleMaxReasons checks that a cycle that records only a few rejections records the
// same first ones, with the same reasons, as a full explain, HardwareFit's (worded on demand)
// as much as a predicate's.
func TestScheduleMaxReasons(t *testing.T) {
	fleet := testFleet()
	s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), fleet.ScoreLister()),
		plugins.NewRegistry(), plugins.DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	snap := fleet.Snapshot()
	p := st.MakePlacement("p", "ns").PredicateLabels(map[string]string{"tier": "gold"}).Obj()
	in := st.MakeHPAIntent("web", "ns").Placement("p").
		Consumer(st.MakeConsumer("web").Target("Deployment", "web", "web").Replicas(1).Obj()).Obj()
	rejected := func(opts scheduler.Options) map[string][]scheduler.Rejection {
		res := s.Schedule(t.Context(), snap, &framework.Request{Placement: p, Intents: []*fleetfitv1alpha1.HPAIntent{in}, Now: now}, opts)
		if res.Failed() {
			t.Fatalf("the cycle failed: %v", res.Status)
		}
		out := map[string][]scheduler.Rejection{}
		for _, f := range res.Filters {
			out[f.Plugin] = f.Rejected
		}
		return out
	}
	full := rejected(scheduler.Options{Explain: true})
	if n := len(full[framework.HardwareFitName]); n != 5 {
		t.Fatalf("HardwareFit rejected %d clusters, want the 5 gold ones (no cluster reports an inventory): %v", n, full)
	}
	bounded := rejected(scheduler.Options{Explain: true, MaxReasons: 2})
	for plugin, all := range full {
		want := all[:min(2, len(all))]
		if diff := cmp.Diff(want, bounded[plugin], cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: rejections with MaxReasons 2 (-first of a full explain,+got):\n%s", plugin, diff)
		}
	}
	for _, r := range bounded[framework.HardwareFitName] {
		if r.Reason != framework.NoInventory {
			t.Errorf("%s: reason %q, want %q", r.Cluster, r.Reason, framework.NoInventory)
		}
	}
}
