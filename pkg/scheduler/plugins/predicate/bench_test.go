package predicate

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func benchFleet(n int) cachetest.Fleet {
	envs := []string{"prod", "staging", "dev"}
	regions := []string{"us-east", "us-west", "eu-west", "ap-south"}
	var f cachetest.Fleet
	for i := range n {
		name := fmt.Sprintf("cluster-%05d", i)
		f.Clusters = append(f.Clusters, st.MakeCluster(name).
			Label("env", envs[i%len(envs)]).
			Label("region", regions[i%len(regions)]).
			Label("tier", fmt.Sprint(i%5)).
			Claim("platform", "kind").
			KubeVersion(fmt.Sprintf("v1.%d.0", 28+i%4)).
			ResourceVersion("1").Obj())
		f.Scores = append(f.Scores, st.MakeScore(name, "res", nil, map[string]int32{"cpu": int32(i % 10), "memory": int32(i % 7)}))
	}
	return f
}

func benchFilter(b *testing.B, n int, pl *clusterv1beta1.Placement) {
	f := benchFleet(n)
	snap := f.Snapshot()
	p := newPlugin(b, f)
	req := &framework.Request{Placement: pl, Decided: framework.NewBitset(n), Now: now}
	candidates := framework.NewFullBitset(n)
	// Warm the caches as a running hub would have them.
	if _, status := p.Filter(b.Context(), framework.NewCycleState(), snap, req, candidates, nil); !status.IsSuccess() {
		b.Fatal(status)
	}
	b.ReportAllocs()
	b.ResetTimer()
	selected := 0
	for b.Loop() {
		out, status := p.Filter(b.Context(), framework.NewCycleState(), snap, req, candidates, nil)
		if !status.IsSuccess() {
			b.Fatal(status)
		}
		selected = out.Count()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/cluster")
	b.ReportMetric(float64(selected), "selected")
}

// BenchmarkPredicateLabels is the common case: label-only predicates over a large fleet.
func BenchmarkPredicateLabels(b *testing.B) {
	pl := st.MakePlacement("p", "ns").UID("u").
		Predicate(clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{
			MatchLabels: map[string]string{"env": "prod"},
			MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "region", Operator: metav1.LabelSelectorOpIn, Values: []string{"us-east", "eu-west"}},
			},
		}}).
		PredicateLabels(map[string]string{"env": "staging", "tier": "3"}).
		Obj()
	benchFilter(b, 10000, pl)
}

// BenchmarkPredicateCEL evaluates CEL over labels, status and AddOnPlacementScores.
func BenchmarkPredicateCEL(b *testing.B) {
	pl := st.MakePlacement("p", "ns").UID("u").PredicateCEL(
		`managedCluster.metadata.labels["env"] == "prod"`,
		`managedCluster.status.version.kubernetes != "v1.28.0"`,
		`managedCluster.scores("res").filter(s, s.name == "cpu").all(e, e.value > 3)`,
	).Obj()
	benchFilter(b, 1000, pl)
}
