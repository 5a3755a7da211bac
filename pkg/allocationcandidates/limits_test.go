package allocationcandidates

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// eightNodes is a cluster of eight one-shape nodes of eight cores each.
func eightNodes() clusterSpec {
	var nodes []*corev1.Node
	for i := range 8 {
		n := fmt.Sprintf("n%d", i)
		nodes = append(nodes, ut.MakeNode(n).Label(name, n).Resource(corev1.ResourceCPU, "8").Obj())
	}
	return clusterSpec{nodes: nodes}
}

// TestEvaluateLimits: an answer over the cap is cut and says so; a search over the budget is
// refused, not answered in part; a search whose context ends stops; a trait no cluster
// reports is an error naming its parameter.
func TestEvaluateLimits(t *testing.T) {
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	type result struct {
		Candidates int
		Truncated  *Truncation
		Summaries  int
		Err        string
	}
	cases := map[string]struct {
		clusters map[string]clusterSpec
		query    string
		limits   Limits
		ctx      context.Context
		want     result
	}{
		"under the cap": {
			clusters: map[string]clusterSpec{"c": eightNodes()},
			query:    "resources1=cpu:1&resources2=cpu:1&group_policy=isolate",
			want:     result{Candidates: 56, Summaries: 9},
		},
		"at the cap": {
			clusters: map[string]clusterSpec{"c": eightNodes()},
			query:    "resources1=cpu:1&resources2=cpu:1&group_policy=isolate",
			limits:   Limits{MaxCandidates: 56},
			want:     result{Candidates: 56, Summaries: 9},
		},
		"over the cap": {
			clusters: map[string]clusterSpec{"c": eightNodes()},
			query:    "resources1=cpu:1&resources2=cpu:1&group_policy=isolate",
			limits:   Limits{MaxCandidates: 3},
			// n0 with n1, n2 and n3: the fourth, cut, would add n4.
			want: result{Candidates: 3, Summaries: 1 + 4, Truncated: &Truncation{Candidates: 3,
				Detail: "there are more than 3 candidates, the most one answer holds: give a limit of at most 3, or narrow the query with required or member_of"}},
		},
		"a limit over the cap": {
			clusters: map[string]clusterSpec{"c": eightNodes()},
			query:    "resources1=cpu:1&resources2=cpu:1&group_policy=isolate&limit=500",
			limits:   Limits{MaxCandidates: 3},
			want: result{Candidates: 3, Summaries: 1 + 4, Truncated: &Truncation{Candidates: 3,
				Detail: "there are more than 3 candidates, the most one answer holds: give a limit of at most 3, or narrow the query with required or member_of"}},
		},
		"a limit under the cap is not a cut": {
			clusters: map[string]clusterSpec{"c": eightNodes()},
			query:    "resources1=cpu:1&resources2=cpu:1&group_policy=isolate&limit=5",
			limits:   Limits{MaxCandidates: 10},
			want:     result{Candidates: 5, Summaries: 1 + 6},
		},
		"over the budget": {
			clusters: map[string]clusterSpec{"c": eightNodes()},
			query:    numberedGroups(9, "cpu:8", PolicyIsolate),
			limits:   Limits{WorkBudget: 100000},
			want: result{Err: "query: too costly to answer: the search over the fleet needs more than 100000 steps; " +
				"give a small limit, ask for fewer numbered groups (it has 9), or narrow it with required or member_of"},
		},
		"within the budget": {
			clusters: map[string]clusterSpec{"c": eightNodes()},
			query:    numberedGroups(8, "cpu:8", PolicyIsolate) + "&limit=1",
			limits:   Limits{WorkBudget: 100000},
			want:     result{Candidates: 1, Summaries: 9},
		},
		"the caller left": {
			clusters: map[string]clusterSpec{"c": eightNodes()},
			query:    "resources=cpu:1",
			ctx:      cancelled,
			want:     result{Err: "the search was stopped: context canceled"},
		},
		"a label no cluster reports": {
			clusters: map[string]clusterSpec{"a": eightNodes(), "b": eightNodes()},
			query:    "resources=cpu:1&resources1=cpu:1&required1=in:fleetfit.io/x,example.com/magic&group_policy=none",
			want: result{Err: "required1: no cluster reports the node label example.com/magic (of example.com/magic), so no node can be said to have it or lack it: " +
				"agents report the labels under their --feature-prefixes; add example.com/magic (or a prefix of it) to them"},
		},
		"thousands of traits over the budget": {
			clusters: map[string]clusterSpec{"a": eightNodes(), "b": eightNodes(), "c": eightNodes()},
			query:    "resources=cpu:1&required=" + manyTraits(1000),
			limits:   Limits{WorkBudget: 1500},
			want: result{Err: "query: too costly to answer: the search over the fleet needs more than 1500 steps; " +
				"give a small limit, or narrow it with required or member_of"},
		},
		"thousands of traits within the budget": {
			clusters: map[string]clusterSpec{"a": eightNodes(), "b": eightNodes(), "c": eightNodes()},
			query:    "resources=cpu:1&required=" + manyTraits(1000),
			want: result{Err: "required: no cluster reports the node label example.com/t0 (of example.com/t0), so no node can be said to have it or lack it: " +
				"agents report the labels under their --feature-prefixes; add example.com/t0 (or a prefix of it) to them"},
		},
		"a label one cluster reports": {
			clusters: map[string]clusterSpec{"a": eightNodes(), "b": {nodes: eightNodes().nodes, reports: []string{"example.com/magic"}}},
			query:    "resources=cpu:1&required=!example.com/magic",
			want:     result{Candidates: 8, Summaries: 9},
		},
	}
	for title, tc := range cases {
		t.Run(title, func(t *testing.T) {
			q, err := ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			resp, err := Evaluate(ctx, snapshot(t, tc.clusters), q, now, tc.limits)
			var got result
			if err != nil {
				got.Err = err.Error()
			} else {
				got = result{Candidates: len(resp.AllocationRequests), Truncated: resp.Truncated, Summaries: len(resp.ProviderSummaries)}
				describe(t, resp)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Evaluate (-want,+got):\n%s", diff)
			}
		})
	}
}

// manyTraits returns n traits on labels no agent reports.
func manyTraits(n int) string {
	traits := make([]string, n)
	for i := range traits {
		traits[i] = fmt.Sprintf("example.com/t%d", i)
	}
	return strings.Join(traits, ",")
}

// TestEvaluateErrorKinds: the errors of Evaluate are the kinds the endpoint tells apart.
func TestEvaluateErrorKinds(t *testing.T) {
	snap := snapshot(t, map[string]clusterSpec{"c": eightNodes()})
	for query, want := range map[string]string{
		"resources=cpu:1&required=example.com/magic": "*allocationcandidates.Error",
		numberedGroups(9, "cpu:8", PolicyIsolate):    "*allocationcandidates.BudgetError",
	} {
		q, err := ParseQuery(query)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Evaluate(t.Context(), snap, q, now, Limits{WorkBudget: 1000})
		var bad *Error
		var costly *BudgetError
		got := fmt.Sprintf("%T", err)
		if errors.As(err, &bad) == errors.As(err, &costly) || got != want {
			t.Errorf("%s: got %v (%s), want a %s", query, err, got, want)
		}
		if !strings.Contains(err.Error(), ": ") {
			t.Errorf("%s: %q does not start with what is at fault", query, err)
		}
	}
}
