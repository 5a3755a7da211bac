package candidatescmd

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// writeFleet writes a fleet file of clusters, each with nodes one-shape nodes of eight cores,
// and returns its path.
func writeFleet(t testing.TB, clusters, nodes int) string {
	t.Helper()
	var b bytes.Buffer
	doc := func(obj any) {
		raw, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("---\n")
		b.Write(raw)
	}
	for c := range clusters {
		name := fmt.Sprintf("cluster%04d", c)
		mc := ut.MakeCluster(name).Obj()
		mc.APIVersion, mc.Kind = "cluster.open-cluster-management.io/v1", "ManagedCluster"
		doc(mc)
		for n := range nodes {
			node := ut.MakeNode(fmt.Sprintf("%s-n%d", name, n)).Label("fleetfit.io/cluster", name).
				Label("fleetfit.io/name", fmt.Sprint(n)).Resource(corev1.ResourceCPU, "8").Obj()
			node.APIVersion, node.Kind = "v1", "Node"
			doc(node)
		}
	}
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// numberedGroups returns n numbered groups of res with policy.
func numberedGroups(n int, res, policy string) string {
	q := "group_policy=" + policy
	for i := 1; i <= n; i++ {
		q += fmt.Sprintf("&resources%d=%s", i, res)
	}
	return q
}

func runCandidates(t testing.TB, args ...string) (string, error) {
	var out bytes.Buffer
	c := NewCommand(clientopts.New())
	c.SetOut(&out)
	c.SetErr(&out)
	c.SetArgs(args)
	err := c.ExecuteContext(t.Context())
	return out.String(), err
}

// TestBounds: the CLI cuts and refuses as the hub does, with its own flags.
func TestBounds(t *testing.T) {
	fleet := writeFleet(t, 2, 8)
	cases := map[string]struct {
		args []string
		rows int
		last string
		err  string
	}{
		"cut at --max-candidates": {
			args: []string{numberedGroups(7, "cpu:1", "none"), "--max-candidates", "5"},
			rows: 1 + 5,
			last: "Only the first 5 candidates: there are more than 5 candidates, the most one answer holds: give a limit of at most 5, or narrow the query with required or member_of.",
		},
		"a limit under the cap": {
			args: []string{numberedGroups(7, "cpu:1", "none") + "&limit=2", "--max-candidates", "5"},
			rows: 1 + 2,
		},
		"over --work-budget": {
			args: []string{numberedGroups(9, "cpu:8", "isolate"), "--work-budget", "10000"},
			err:  "query: too costly to answer: the search over the fleet needs more than 10000 steps",
		},
		"too many groups": {
			args: []string{numberedGroups(485, "cpu:1", "none")},
			err:  "resources113: a numbered group beyond the 16 a query may have (it has 485)",
		},
		"a label no cluster reports": {
			args: []string{"resources=cpu:1&required=example.com/magic"},
			err:  "required: no cluster reports the node label example.com/magic",
		},
		"a bad --max-candidates": {
			args: []string{"resources=cpu:1", "--max-candidates", "0"},
			err:  "--max-candidates must be positive, got 0",
		},
	}
	for title, tc := range cases {
		t.Run(title, func(t *testing.T) {
			out, err := runCandidates(t, append(tc.args, "-f", fleet)...)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
					t.Fatalf("got %v, want an error starting %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			rows := lines
			last := ""
			if strings.HasPrefix(lines[len(lines)-1], "Only") {
				rows, last = lines[:len(lines)-1], lines[len(lines)-1]
			}
			if diff := cmp.Diff([]any{tc.rows, tc.last}, []any{len(rows), last}); diff != "" {
				t.Errorf("rows and last line (-want,+got):\n%s\n%s", diff, out)
			}
		})
	}
}

// BenchmarkRunWorstQueries runs `fleetfit candidates -f` on a fleet file of 100 clusters of
// 15 one-shape nodes, with the queries that enumerate most: seven one-core groups (cut at
// the default 1,000 candidates, printed as JSON and as a table), and sixteen isolated groups
// no cluster has room for (refused once the work budget is spent). The fleet file is read
// every time, as the command does.
func BenchmarkRunWorstQueries(b *testing.B) {
	fleet := writeFleet(b, 100, 15)
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"seven-groups-json", []string{numberedGroups(7, "cpu:1", "none"), "-o", "json"}},
		{"seven-groups-table", []string{numberedGroups(7, "cpu:1", "none")}},
		{"sixteen-groups-no-room", []string{numberedGroups(16, "cpu:5", "isolate")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var size int
			b.ReportAllocs()
			for b.Loop() {
				out, err := runCandidates(b, append(bc.args, "-f", fleet)...)
				if err != nil && !strings.HasPrefix(err.Error(), "query: too costly") {
					b.Fatal(err)
				}
				size = len(out)
			}
			b.ReportMetric(float64(size), "output-bytes")
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/query")
		})
	}
}
