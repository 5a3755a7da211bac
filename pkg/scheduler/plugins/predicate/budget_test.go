package predicate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// nested is n comprehensions over a literal list of ten, one inside the other: 10^n
// evaluations of the innermost term on every cluster.
func nested(n int) string {
	list := "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"
	vars := "abcdefgh"
	expr := strings.Join(strings.Split(vars[:n], ""), " + ") + " > 0"
	for i := n - 1; i >= 0; i-- {
		expr = fmt.Sprintf("%s.all(%c, %s)", list, vars[i], expr)
	}
	return expr
}

// overLabels is n comprehensions over the cluster's own labels, one inside the other: its cost
// is known only once a cluster is in hand.
func overLabels(n int) string {
	vars := "abcdefgh"
	expr := "true"
	for i := n - 1; i >= 0; i-- {
		expr = fmt.Sprintf("managedCluster.metadata.labels.all(%c, %s)", vars[i], expr)
	}
	return expr
}

// labelled is a fleet of n clusters with labels labels each.
func labelled(n, labels int) cachetest.Fleet {
	var f cachetest.Fleet
	for i := range n {
		c := st.MakeCluster(fmt.Sprintf("c%05d", i))
		for l := range labels {
			c.Label(fmt.Sprintf("label-%02d", l), "x")
		}
		f.Clusters = append(f.Clusters, c.Obj())
	}
	return f
}

func TestCELBudget(t *testing.T) {
	cases := map[string]struct {
		expression string
		clusters   int
		labels     int
		// budget replaces cycleCostBudget when set.
		budget uint64
		// want is the start of the Misconfigured message; empty: the filter succeeds.
		want string
	}{
		"a selector over labels": {
			expression: `managedCluster.metadata.labels.exists(k, k == "label-03")`, clusters: 50, labels: 20,
		},
		"two comprehensions over literal lists": {expression: nested(2), clusters: 50},
		"five comprehensions over literal lists stop at the first cluster": {
			expression: nested(5), clusters: 50,
			want: fmt.Sprintf("Misconfigured: CEL expression %q cost more than 100000 on cluster c00000", nested(5)),
		},
		"four comprehensions over 20 labels stop at the first cluster": {
			expression: overLabels(4), clusters: 50, labels: 20,
			want: fmt.Sprintf("Misconfigured: CEL expression %q cost more than 100000 on cluster c00000", overLabels(4)),
		},
		"a cheap expression on many clusters adds up to the cycle's budget": {
			// Three comprehensions over 20 labels cost about 17,000 per cluster: under the limit of
			// one cluster, over the cycle's (lowered to a million here) after some 60 clusters.
			expression: overLabels(3), clusters: 500, labels: 20, budget: 1_000_000,
			want: "Misconfigured: the CEL expressions of the predicates cost more than 1000000 over",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.budget > 0 {
				saved := cycleCostBudget
				cycleCostBudget = tc.budget
				t.Cleanup(func() { cycleCostBudget = saved })
			}
			f := labelled(tc.clusters, tc.labels)
			for _, explain := range []bool{false, true} {
				p := newPlugin(t, f)
				snap := f.Snapshot()
				req := &framework.Request{Placement: st.MakePlacement("p", "ns").UID("u").PredicateCEL(tc.expression).Obj(), Decided: framework.NewBitset(tc.clusters), Now: now}
				var rejections framework.Rejections
				if explain {
					rejections = rejectionsMap{}
				}
				out, status := p.Filter(t.Context(), framework.NewCycleState(), snap, req, framework.NewFullBitset(tc.clusters), rejections)
				if tc.want == "" {
					if !status.IsSuccess() || out.Count() != tc.clusters {
						t.Fatalf("explain %v: status %v, %d of %d clusters selected; want success and all", explain, status, out.Count(), tc.clusters)
					}
					continue
				}
				if status.Code() != framework.Misconfigured || !strings.HasPrefix(status.String(), tc.want) {
					t.Fatalf("explain %v: status %q, want it to start with %q", explain, status.String(), tc.want)
				}
			}
		})
	}
}

type rejectionsMap map[int]string

func (r rejectionsMap) Reject(i int, reason string) { r[i] = reason }

// TestCELStopsWithTheContext: a cancelled cycle stops evaluating at once.
func TestCELStopsWithTheContext(t *testing.T) {
	f := labelled(200, 20)
	p := newPlugin(t, f)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req := &framework.Request{Placement: st.MakePlacement("p", "ns").UID("u").PredicateCEL(overLabels(2)).Obj(), Decided: framework.NewBitset(200), Now: now}
	_, status := p.Filter(ctx, framework.NewCycleState(), f.Snapshot(), req, framework.NewFullBitset(200), nil)
	if status.Code() != framework.Error || !strings.Contains(status.String(), "context canceled") {
		t.Errorf("status %v, want an error saying the context was cancelled", status)
	}
}

// BenchmarkCELBomb reports how long a Placement whose CEL expression would cost too much
// takes to be found Misconfigured on 10,000 clusters: five comprehensions over literal lists,
// and four over the cluster's labels.
func BenchmarkCELBomb(b *testing.B) {
	const clusters = 10000
	f := labelled(clusters, 20)
	snap := f.Snapshot()
	for name, expr := range map[string]string{"literal-lists": nested(5), "labels": overLabels(4)} {
		b.Run(name, func(b *testing.B) {
			p := newPlugin(b, f)
			var worst time.Duration
			n := 0
			for b.Loop() {
				// A new generation each time: nothing is compiled in advance.
				n++
				req := &framework.Request{Placement: st.MakePlacement("p", "ns").UID("u").Generation(int64(n)).PredicateCEL(expr).Obj(),
					Decided: framework.NewBitset(clusters), Now: now}
				start := time.Now()
				_, status := p.Filter(b.Context(), framework.NewCycleState(), snap, req, framework.NewFullBitset(clusters), nil)
				worst = max(worst, time.Since(start))
				if status.Code() != framework.Misconfigured {
					b.Fatalf("status %v, want Misconfigured", status)
				}
			}
			b.ReportMetric(worst.Seconds(), "worst-s-to-misconfigured")
		})
	}
}
