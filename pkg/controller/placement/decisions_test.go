package placement

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i <= to; i++ {
		out = append(out, fmt.Sprintf("%s%03d", prefix, i))
	}
	return out
}

func decisionsOf(names []string) []scheduler.Decision {
	out := make([]scheduler.Decision, len(names))
	for i, n := range names {
		out[i] = scheduler.Decision{ClusterName: n, Score: int64(len(names) - i)}
	}
	return out
}

func TestGroupLength(t *testing.T) {
	cases := map[string]struct {
		v       intstr.IntOrString
		total   int
		want    int
		wantErr bool
	}{
		"unset means one group":        {v: intstr.IntOrString{}, total: 7, want: 7},
		"int":                          {v: intstr.FromInt32(3), total: 7, want: 3},
		"int larger than total":        {v: intstr.FromInt32(30), total: 7, want: 7},
		"zero means one group":         {v: intstr.FromInt32(0), total: 7, want: 7},
		"percentage rounds up":         {v: intstr.FromString("25%"), total: 7, want: 2},
		"100%":                         {v: intstr.FromString("100%"), total: 7, want: 7},
		"not a percentage":             {v: intstr.FromString("25"), total: 7, wantErr: true},
		"garbage percentage":           {v: intstr.FromString("a%"), total: 7, wantErr: true},
		"empty fleet keeps zero total": {v: intstr.FromString("50%"), total: 0, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, st := groupLength(tc.v, tc.total)
			if tc.wantErr {
				if st.Code() != framework.Misconfigured {
					t.Fatalf("status %v, want Misconfigured", st)
				}
				return
			}
			if st != nil || got != tc.want {
				t.Errorf("groupLength = %d, %v; want %d", got, st, tc.want)
			}
		})
	}
}

func TestGroupDecisions(t *testing.T) {
	fleet := cachetest.Fleet{}
	for i, n := range names("c", 1, 6) {
		region := "east"
		if i%2 == 1 {
			region = "west"
		}
		fleet.Clusters = append(fleet.Clusters, utiltesting.MakeCluster(n).Label("region", region).Obj())
	}
	snap := fleet.Snapshot()
	selected := decisionsOf(names("c", 1, 6))

	type group struct {
		Name, Index string
		Clusters    []string
	}
	flatten := func(gs []decisionGroup) []group {
		var out []group
		for _, g := range gs {
			out = append(out, group{Name: g.name, Index: fmt.Sprint(g.index), Clusters: clusterNames(g.clusters)})
		}
		return out
	}
	cases := map[string]struct {
		placement *clusterv1beta1.Placement
		selected  []scheduler.Decision
		want      []group
	}{
		"one unnamed group sorted by name": {
			placement: utiltesting.MakePlacement("p", "ns").Obj(),
			selected:  selected,
			want:      []group{{Index: "0", Clusters: names("c", 1, 6)}},
		},
		"nothing selected still yields one empty group": {
			placement: utiltesting.MakePlacement("p", "ns").Obj(),
			want:      []group{{Index: "0"}},
		},
		"predefined group first, then the rest, each cut by size": {
			placement: utiltesting.MakePlacement("p", "ns").DecisionGroup("canary", map[string]string{"region": "west"}).
				ClustersPerDecisionGroup(intstr.FromInt32(2)).Obj(),
			selected: selected,
			want: []group{
				{Name: "canary", Index: "0", Clusters: []string{"c002", "c004"}},
				{Name: "canary", Index: "1", Clusters: []string{"c006"}},
				{Index: "2", Clusters: []string{"c001", "c003"}},
				{Index: "3", Clusters: []string{"c005"}},
			},
		},
		"sortBy Score orders each group by score": {
			placement: utiltesting.MakePlacement("p", "ns").SortBy(clusterv1beta1.PlacementSortByScore).Obj(),
			selected:  selected,
			want:      []group{{Index: "0", Clusters: names("c", 1, 6)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gs, st := groupDecisions(tc.placement, snap, slices.Clone(tc.selected))
			if st != nil {
				t.Fatal(st)
			}
			if diff := cmp.Diff(tc.want, flatten(gs)); diff != "" {
				t.Errorf("groups (-want,+got):\n%s", diff)
			}
		})
	}
}

func clusterNames(ds []scheduler.Decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ClusterName)
	}
	return out
}

func layoutNames(ds []desiredDecision) map[string][]string {
	out := map[string][]string{}
	for _, d := range ds {
		out[d.name] = decisionClusterNames(d.decisions)
	}
	return out
}

func TestLayoutDecisions(t *testing.T) {
	cases := map[string]struct {
		selected []string
		existing map[string][]string
		want     map[string][]string
	}{
		"fresh layout is OCM's: by name, 100 per object": {
			selected: names("c", 1, 230),
			want: map[string][]string{
				"p-decision-1": names("c", 1, 100),
				"p-decision-2": names("c", 101, 200),
				"p-decision-3": names("c", 201, 230),
			},
		},
		"empty selection still writes one empty object": {
			want: map[string][]string{"p-decision-1": {}},
		},
		"a new cluster sorting first does not shift the others": {
			selected: append([]string{"a000"}, names("c", 1, 230)...),
			existing: map[string][]string{
				"p-decision-1": names("c", 1, 100),
				"p-decision-2": names("c", 101, 200),
				"p-decision-3": names("c", 201, 230),
			},
			want: map[string][]string{
				"p-decision-1": names("c", 1, 100),
				"p-decision-2": names("c", 101, 200),
				"p-decision-3": append([]string{"a000"}, names("c", 201, 230)...),
			},
		},
		"shrinking compacts the last object into free slots": {
			selected: append(names("c", 1, 50), names("c", 101, 200)...),
			existing: map[string][]string{
				"p-decision-1": names("c", 1, 100),
				"p-decision-2": names("c", 101, 200),
				"p-decision-3": names("c", 201, 230),
			},
			want: map[string][]string{
				"p-decision-1": names("c", 1, 50),
				"p-decision-2": names("c", 101, 200),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := utiltesting.MakePlacement("p", "ns").Obj()
			snap := cachetest.Fleet{}.Snapshot()
			groups, st := groupDecisions(p, snap, decisionsOf(tc.selected))
			if st != nil {
				t.Fatal(st)
			}
			got := layoutNames(layoutDecisions("p", "", groups, tc.existing))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("layout (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestNoClusterVanishes replays the writes bind makes — interim lists, then final lists in
// order, then deletions — and checks after every single write that each cluster selected
// both before and after is in some decision object.
func TestNoClusterVanishes(t *testing.T) {
	cases := map[string]struct {
		before   map[string][]string
		selected []string
	}{
		"insert at the front": {
			before:   map[string][]string{"p-decision-1": names("c", 1, 100), "p-decision-2": names("c", 101, 150)},
			selected: append([]string{"a000"}, names("c", 1, 150)...),
		},
		"shrink so that the last object goes away": {
			before:   map[string][]string{"p-decision-1": names("c", 1, 100), "p-decision-2": names("c", 101, 200), "p-decision-3": names("c", 201, 250)},
			selected: append(names("c", 1, 20), names("c", 150, 250)...),
		},
		"full objects gain and lose at once": {
			before:   map[string][]string{"p-decision-1": names("c", 1, 100), "p-decision-2": names("c", 101, 200), "p-decision-3": names("c", 201, 210)},
			selected: append(append(names("b", 1, 40), names("c", 61, 100)...), names("c", 150, 210)...),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			state := map[string][]string{}
			for k, v := range tc.before {
				state[k] = slices.Clone(v)
			}
			var beforeAll []string
			for _, v := range tc.before {
				beforeAll = append(beforeAll, v...)
			}
			stay := map[string]bool{}
			for _, c := range tc.selected {
				if slices.Contains(beforeAll, c) {
					stay[c] = true
				}
			}
			check := func(step string) {
				held := map[string]bool{}
				for _, v := range state {
					if len(v) > maxDecisionsPerObject {
						t.Fatalf("%s: an object holds %d clusters", step, len(v))
					}
					for _, c := range v {
						held[c] = true
					}
				}
				for c := range stay {
					if !held[c] {
						t.Fatalf("%s: %s is in no decision object", step, c)
					}
				}
			}
			p := utiltesting.MakePlacement("p", "ns").Obj()
			groups, _ := groupDecisions(p, cachetest.Fleet{}.Snapshot(), decisionsOf(tc.selected))
			desired := layoutDecisions("p", "", groups, tc.before)
			for n, interim := range interimDecisions(desired, tc.before) {
				state[n] = decisionClusterNames(interim)
				check("interim " + n)
			}
			keep := map[string]bool{}
			for _, d := range desired {
				state[d.name] = decisionClusterNames(d.decisions)
				keep[d.name] = true
				check("final " + d.name)
			}
			for n := range tc.before {
				if !keep[n] {
					delete(state, n)
					check("delete " + n)
				}
			}
			var after []string
			for _, v := range state {
				after = append(after, v...)
			}
			slices.Sort(after)
			want := slices.Clone(tc.selected)
			slices.Sort(want)
			if diff := cmp.Diff(want, after); diff != "" {
				t.Errorf("final clusters (-want,+got):\n%s", diff)
			}
		})
	}
}
