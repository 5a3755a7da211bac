package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// BenchmarkScheduleCycle runs one cycle over 10,000 clusters with labels, claims, a taint on
// 5% of them, an AddOnPlacementScore each, and the decisions of 1,000 other placements, for a
// placement with a label predicate, numberOfClusters 10 and the prioritizers Balance, Steady,
// ResourceAllocatableCPU and AddOn. The snapshot is built once, as the hub's cache does.
func BenchmarkScheduleCycle(b *testing.B) {
	const (
		numClusters   = 10000
		numPlacements = 1000
		perPlacement  = 10
	)
	f := cachetest.Fleet{
		Sets:     []*clusterv1beta2.ManagedClusterSet{st.MakeExclusiveClusterSet("default")},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.MakeClusterSetBinding("ns", "default")},
		Decided:  map[string][]string{},
	}
	names := make([]string, numClusters)
	for k := range numClusters {
		names[k] = fmt.Sprintf("cluster-%05d", k)
		c := st.MakeCluster(names[k]).
			Label("region", fmt.Sprintf("r%d", k%10)).
			Label("env", []string{"prod", "staging"}[k%2]).
			Claim("zone", fmt.Sprintf("z%d", k%30)).
			Claim("platform", "linux").
			Resource(clusterv1.ResourceCPU, fmt.Sprint(8+k%64), fmt.Sprint(8+k%64)).
			Resource(clusterv1.ResourceMemory, fmt.Sprintf("%dGi", 32+k%128), fmt.Sprintf("%dGi", 32+k%128))
		if k%20 == 0 {
			c.Taint("maintenance", "", clusterv1.TaintEffectNoSelect, now.Add(-time.Hour))
		}
		f.Clusters = append(f.Clusters, c.Obj())
		f.Scores = append(f.Scores, st.MakeScore(names[k], "demo", nil, map[string]int32{"score": int32(k%201 - 100), "other": 1}))
	}
	for p := range numPlacements {
		decided := make([]string, perPlacement)
		for k := range decided {
			decided[k] = names[(p*7919+k*104729)%numClusters]
		}
		f.Decided[fmt.Sprintf("ns/p%04d", p)] = decided
	}
	f.Decided["ns/bench"] = names[:perPlacement]
	snap := f.Snapshot()

	registry := plugins.NewRegistry()
	var filters []string
	for _, name := range []string{"Predicate", "TaintToleration"} {
		if _, ok := registry[name]; ok {
			filters = append(filters, name)
		}
	}
	s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), f.ScoreLister()), registry,
		scheduler.Profile{Filters: filters, Weights: ocmDefaults})
	if err != nil {
		b.Fatal(err)
	}
	p := st.MakePlacement("bench", "ns").
		PredicateLabels(map[string]string{"env": "prod"}).
		NumberOfClusters(10).
		BuiltIn("ResourceAllocatableCPU", 1).
		AddOn("demo", "score", 1).
		Obj()
	req := &framework.Request{Placement: p, Decided: snap.BitsetOf(snap.DecidedNames("ns/bench")), Now: now}
	ctx := b.Context()

	res := s.Schedule(ctx, snap, req, scheduler.Options{})
	if res.Failed() || len(res.Decisions()) != 10 {
		b.Fatalf("cycle: status %v, %d decisions", res.Status, len(res.Decisions()))
	}
	b.Logf("filters %v, %d feasible of %d", filters, res.NumFeasible(), snap.NumClusters())

	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Schedule(ctx, snap, req, scheduler.Options{})
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
}
