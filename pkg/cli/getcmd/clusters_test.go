package getcmd

import (
	stdbytes "bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestGetClustersShowsStale: a cluster whose inventory is an hour old is marked stale, one
// whose inventory is a minute old is not. (A fleet file refuses a second ClusterInventory in
// a cluster's namespace; from the hub, get clusters ignores it as the hub does.)
func TestGetClustersShowsStale(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	inventory := func(ns, name string, observed time.Time, nodes int) string {
		return `---
apiVersion: fleetfit.io/v1alpha1
kind: ClusterInventory
metadata: {namespace: ` + ns + `, name: ` + name + `}
status:
  observedAt: "` + observed.Format(time.RFC3339) + `"
  nodeCount: ` + string(rune('0'+nodes)) + `
  readyNodeCount: ` + string(rune('0'+nodes)) + `
`
	}
	fleet := `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: fresh}
spec: {hubAcceptsClient: true}
---
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: silent}
spec: {hubAcceptsClient: true}
` + inventory("fresh", "fresh", now.Add(-time.Minute), 2) + inventory("silent", "silent", now.Add(-time.Hour), 3)
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(fleet), 0o600); err != nil {
		t.Fatal(err)
	}
	o := &ClustersOptions{Files: []string{path}, Output: &output.Flags{Format: output.Table}, Now: func() time.Time { return now }}
	var out stdbytes.Buffer
	if err := o.Run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		rows[strings.Fields(line)[0]] = line
	}
	if r := rows["fresh"]; !strings.Contains(r, " 2/2 ") || strings.Contains(r, "stale") {
		t.Errorf("row of fresh %q: want 2/2 nodes and no stale mark", r)
	}
	if r := rows["silent"]; !strings.Contains(r, "60m ago (stale)") && !strings.Contains(r, "1h ago (stale)") {
		t.Errorf("row of silent %q: want its inventory marked stale", r)
	}
}

// TestGetClustersWithoutNodesInAFile: a cluster a fleet file gives no nodes for is said to lack
// them in the files, not an agent.
func TestGetClustersWithoutNodesInAFile(t *testing.T) {
	fleet := `apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata: {name: bare}
spec: {hubAcceptsClient: true}
`
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(fleet), 0o600); err != nil {
		t.Fatal(err)
	}
	o := &ClustersOptions{Files: []string{path}, Output: &output.Flags{Format: output.Table}, Now: time.Now}
	var out stdbytes.Buffer
	if err := o.Run(t.Context(), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "none: the files give no Nodes or ClusterInventory for it") {
		t.Errorf("get clusters printed:\n%s\nwant the row of bare to say the files give no nodes for it", out.String())
	}
}

// TestAgentColumn: the add-on label names the agent's health; without it, a cluster that
// reports has an agent installed without the add-on, and one that does not has none.
func TestAgentColumn(t *testing.T) {
	report := &fleetfitv1alpha1.ClusterInventory{}
	for _, tc := range []struct {
		name        string
		addOn       string // the label's value; "-" for no label
		inv         *fleetfitv1alpha1.ClusterInventory
		files       bool
		want, empty string
	}{
		{name: "add-on available", addOn: "available", inv: report, want: "add-on available"},
		{name: "add-on unreachable, no report yet", addOn: "unreachable", want: "add-on unreachable", empty: "none yet"},
		{name: "add-on label without a value", addOn: "", want: "add-on unknown", empty: "none yet"},
		{name: "installed without the add-on", addOn: "-", inv: report, want: "installed"},
		{name: "no agent", addOn: "-", want: "none", empty: "none: no fleetfit agent"},
		{name: "fleet files say nothing of agents", addOn: "-", inv: report, files: true, want: "-"},
		{name: "fleet files with the add-on label", addOn: "unhealthy", files: true, want: "add-on unhealthy",
			empty: "none: the files give no Nodes or ClusterInventory for it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ut.MakeCluster("c1")
			if tc.addOn != "-" {
				c.Label(framework.AgentAddOnLabel, tc.addOn)
			}
			o := &ClustersOptions{}
			if tc.files {
				o.Files = []string{"fleet.yaml"}
			}
			if got := o.agent(c.Obj(), tc.inv); got != tc.want {
				t.Errorf("AGENT %q, want %q", got, tc.want)
			}
			if tc.inv == nil {
				if got := o.noInventory(c.Obj()); got != tc.empty {
					t.Errorf("INVENTORY %q, want %q", got, tc.empty)
				}
			}
		})
	}
}

// TestGetClustersStaleAfter: an inventory is marked stale past the threshold the command is
// given as the hub's --inventory-stale-after, the hub's default when it is given none.
func TestGetClustersStaleAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	observed := now.Add(-20 * time.Minute)
	cases := map[string]struct {
		staleAfter time.Duration
		want       string
	}{
		"the hub's default":          {want: "20m ago (stale)"},
		"a hub that waits 30m":       {staleAfter: 30 * time.Minute, want: "20m ago"},
		"a hub that waits 5m":        {staleAfter: 5 * time.Minute, want: "20m ago (stale)"},
		"exactly the hub's 20m wait": {staleAfter: 20 * time.Minute, want: "20m ago"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := &ClustersOptions{InventoryStaleAfter: tc.staleAfter}
			if got := inventoryAge(observed, now, o.staleAfter()); got != tc.want {
				t.Errorf("inventoryAge = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestGetClustersStaleAfterFlag: the flag's default is the hub's, and a threshold that is not
// positive is refused.
func TestGetClustersStaleAfterFlag(t *testing.T) {
	c := newClustersCommand(nil)
	f := c.Flags().Lookup("inventory-stale-after")
	if f == nil {
		t.Fatal("get clusters has no --inventory-stale-after")
	}
	if want := fleetfitv1alpha1.DefaultInventoryStaleAfter.String(); f.DefValue != want {
		t.Errorf("--inventory-stale-after defaults to %s, want the hub's %s", f.DefValue, want)
	}
	c.SetArgs([]string{"--inventory-stale-after", "0s"})
	c.SetOut(&stdbytes.Buffer{})
	c.SetErr(&stdbytes.Buffer{})
	if err := c.Execute(); err == nil || !strings.Contains(err.Error(), "--inventory-stale-after must be positive") {
		t.Errorf("Execute with --inventory-stale-after 0s = %v, want it refused", err)
	}
}
