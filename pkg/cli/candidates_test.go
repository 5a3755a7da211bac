package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestCandidatesFromFile: the example fleet's allocation candidates. cluster1 has 8 cores on
// its CPU node and its A100 on a node with 6 free, so the unnumbered group spreads there;
// cluster2's T4 node takes it whole. Two isolated numbered groups fit on cluster2 alone.
func TestCandidatesFromFile(t *testing.T) {
	out, err := run(t, "candidates", "resources=cpu:8,nvidia.com/gpu:1", "-f", exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	rows := ut.TableRows(out)
	if len(rows) != 3 || rows[1][0] != "cluster1" || rows[2][0] != "cluster2" ||
		!strings.Contains(out, "cpu 8; ") || !strings.Contains(out, ": cpu 8, nvidia.com/gpu 1") {
		t.Errorf("candidates printed\n%s\nwant a spread on cluster1 and one node on cluster2", out)
	}

	out, err = run(t, "candidates", "resources1=cpu:8,nvidia.com/gpu:1&resources2=cpu:4&group_policy=isolate", "-f", exampleFleet, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		AllocationRequests []struct {
			Mappings map[string][]string `json:"mappings"`
		} `json:"allocation_requests"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for _, ar := range resp.AllocationRequests {
		one, two := ar.Mappings["1"], ar.Mappings["2"]
		if len(one) != 1 || len(two) != 1 || one[0] == two[0] {
			t.Errorf("mappings %v: want one node per group, different nodes", ar.Mappings)
			continue
		}
		clusters = append(clusters, strings.SplitN(one[0], "/", 2)[0])
	}
	if diff := cmp.Diff([]string{"cluster2"}, clusters); diff != "" {
		t.Errorf("candidates' clusters (-want,+got):\n%s\n%s", diff, out)
	}

	if _, err := run(t, "candidates", "resources1=cpu:1&resources2=cpu:1", "-f", exampleFleet); err == nil ||
		!strings.HasPrefix(err.Error(), "group_policy: ") {
		t.Errorf("two numbered groups without group_policy: %v, want an error naming group_policy", err)
	}
}
