package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const exampleFleet = "../../deploy/examples/fleet.yaml"

// run runs the fleetfit command line and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := NewCommand()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(t.Context())
	return out.String(), err
}

func TestGetClustersFromFile(t *testing.T) {
	out, err := run(t, "get", "clusters", "-f", exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"NAME", "AVAILABLE", "NODES", "CPU FREE/ALLOC", "MEMORY FREE/ALLOC", "GPUS FREE/ALLOC", "MACHINES FREE/MAX", "CAN ADD", "FEATURES", "INVENTORY", "AGENT"},
		{"cluster1", "Unknown", "4/4", "14/120", "96Gi/416Gi", "A100 4/4, NVIDIA-GeForce-RTX-3090 0/4", "compute-xlarge 2/2", "-", "AVX512F", "0s ago", "-"},
		{"cluster2", "Unknown", "4/4", "32/112", "128Gi/384Gi", "NVIDIA-GeForce-RTX-3090 0/4, Tesla-T4 2/2", "compute-xlarge 1/2", "-", "AVX512F", "0s ago", "-"},
		{"cluster3", "Unknown", "2/2", "32/32", "128Gi/128Gi", "-", "<none>", "-", "pci-0b40_8086.present,qat.intel.com/generic", "0s ago", "-"},
	}
	if diff := cmp.Diff(want, ut.TableRows(out)); diff != "" {
		t.Errorf("get clusters (-want,+got):\n%s\n%s", diff, out)
	}
}

// TestGetMachineTypesFromFile: the example fleet's machine groups, their usage counted from
// its reservation and guest pods.
func TestGetMachineTypesFromFile(t *testing.T) {
	out, err := run(t, "get", "machinetypes", "-A", "-f", exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"CLUSTER", "GROUP", "TYPE", "CPU", "MEMORY", "GPU", "MAXIMUM", "RESERVED", "USED", "WAITING", "READY"},
		{"cluster1", "general-machine", "compute-xlarge", "40", "128Gi", "2 nvidia.com/gpu NVIDIA-GeForce-RTX-3090", "2", "2", "0", "0", "true"},
		{"cluster2", "general-machine", "compute-xlarge", "40", "128Gi", "2 nvidia.com/gpu NVIDIA-GeForce-RTX-3090", "2", "1", "1", "0", "true"},
	}
	if diff := cmp.Diff(want, ut.TableRows(out)); diff != "" {
		t.Errorf("get machinetypes (-want,+got):\n%s\n%s", diff, out)
	}
}

func TestSimulateFromFile(t *testing.T) {
	out, err := run(t, "simulate", "-f", exampleFleet, "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	list := &metav1.List{}
	if err := yaml.Unmarshal([]byte(out), list); err != nil {
		t.Fatalf("decoding the output: %v\n%s", err, out)
	}
	type item struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Decisions []struct {
				ClusterName string `json:"clusterName"`
			} `json:"decisions"`
			NumberOfSelectedClusters int `json:"numberOfSelectedClusters"`
		} `json:"status"`
	}
	var got []string
	for _, raw := range list.Items {
		var it item
		if err := yaml.Unmarshal(raw.Raw, &it); err != nil {
			t.Fatal(err)
		}
		s := it.Kind + " " + it.Metadata.Name
		for _, d := range it.Status.Decisions {
			s += " " + d.ClusterName
		}
		if it.Kind == "Placement" {
			s += " selected=" + strings.Repeat("x", it.Status.NumberOfSelectedClusters)
		}
		got = append(got, s)
	}
	want := []string{
		"Placement fwall selected=x", "PlacementDecision fwall-decision-1 cluster2",
		"Placement training selected=", "PlacementDecision training-decision-1",
		"HPAIntent fwall", "HPAIntent training",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("simulate -o yaml (-want,+got):\n%s\n%s", diff, out)
	}
}

func TestExplainFromFile(t *testing.T) {
	out, err := run(t, "explain", "placement", "training", "-n", "demo", "-f", exampleFleet)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"wants 1 cluster(s); selects none",
		"cluster1   rejected   HardwareFit   consumer training/trainer: no schedulable node with nvidia.com/gpu.product In [A100] has 8 cpu free; the best has 6",
		"cluster2   rejected   HardwareFit   consumer training/trainer: no schedulable node with nvidia.com/gpu.product In [A100]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
	if _, err := run(t, "explain", "placement", "nope", "-n", "demo", "-f", exampleFleet); err == nil || err.Error() != `placement "nope" not found in namespace "demo"` {
		t.Errorf("explaining a missing placement: got %v", err)
	}
}

func TestBadInput(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"simulate without a fleet":    {[]string{"simulate"}, "give fleet files with -f, or --from-hub"},
		"unknown output":              {[]string{"get", "clusters", "-f", exampleFleet, "-o", "xml"}, `unknown output format "xml"`},
		"machine types of no cluster": {[]string{"get", "machinetypes", "-f", exampleFleet}, "name the clusters whose machine types to list, or give -A for every cluster"},
		"no wide machine types":       {[]string{"get", "machinetypes", "-A", "-f", exampleFleet, "-o", "wide"}, `unknown output format "wide"`},
		"bad time":                    {[]string{"simulate", "-f", exampleFleet, "--at", "yesterday"}, `--at "yesterday" is not an RFC 3339 time`},
		"missing file":                {[]string{"simulate", "-f", "no-such-file.yaml"}, "no-such-file.yaml"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestNoKubeconfig: without -f and without any kubeconfig, the commands that read the hub say
// how to name one instead of talking to localhost:8080.
func TestNoKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	cases := map[string][]string{
		"get clusters":       {"get", "clusters"},
		"get placements":     {"get", "placements", "-A"},
		"get machinetypes":   {"get", "machinetypes", "-A"},
		"explain placement":  {"explain", "placement", "p", "-n", "ml"},
		"simulate from hub":  {"simulate", "--from-hub"},
		"an empty --context": {"get", "clusters", "--context", "hub"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, args...)
			if !errors.Is(err, clientopts.ErrNoCluster) {
				t.Fatalf("error = %v, want %v", err, clientopts.ErrNoCluster)
			}
			want := "no cluster to talk to: no kubeconfig was found ($KUBECONFIG is unset or names no file, and ~/.kube/config does not exist); pass --kubeconfig or --context, set KUBECONFIG, or read a fleet file with -f"
			if diff := cmp.Diff(want, err.Error()); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestTerminalOutputIsClean: control characters in what objects say (a message, a reason) and
// in errors reach the terminal escaped, never raw.
func TestTerminalOutputIsClean(t *testing.T) {
	fleet := `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: ml}
spec: {numberOfClusters: 1}
status:
  conditions:
  - type: PlacementSatisfied
    status: "False"
    reason: Unsatisfied
    message: "\e]0;pwned\a\e[2Jcleared\tshifted\u202Eevil"
    lastTransitionTime: "2026-03-01T12:00:00Z"
`
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	if err := os.WriteFile(path, []byte(fleet), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "get", "placements", "-n", "ml", "-o", "wide", "-f", path)
	if err != nil {
		t.Fatal(err)
	}
	rows := ut.TableRows(out)
	if len(rows) != 2 {
		t.Fatalf("want a header and one row, got:\n%s", out)
	}
	got := rows[1][len(rows[1])-1]
	if want := `\x1b]0;pwned\x07\x1b[2Jcleared\tshifted\u202eevil`; got != want {
		t.Errorf("MESSAGE = %q, want %q", got, want)
	}
	assertNoControl(t, out)

	_, err = run(t, "simulate", "-f", filepath.Join(t.TempDir(), "\x1b[2Jfleet.yaml"))
	if err == nil || !strings.Contains(err.Error(), `\x1b[2Jfleet.yaml`) {
		t.Errorf("error = %q, want the file's name with its escape written \\x1b", err)
	}
	if err != nil {
		assertNoControl(t, err.Error())
	}
}

func assertNoControl(t *testing.T, s string) {
	t.Helper()
	for _, r := range s {
		if r != '\n' && unicode.IsControl(r) {
			t.Errorf("the output holds the control character %U:\n%q", r, s)
			return
		}
	}
}

// TestExplainAgreesWithSimulate: when a cycle fails after the scheduler chose, explain and
// simulate both show the decisions the placement keeps, and why.
func TestExplainAgreesWithSimulate(t *testing.T) {
	const fleet = "testdata/failed-layout.yaml"
	out, err := run(t, "simulate", "-f", fleet)
	if err != nil {
		t.Fatal(err)
	}
	var row []string
	for _, r := range ut.TableRows(out) {
		if len(r) >= 5 && r[0] == "ml/p" {
			row = r[:5]
		}
	}
	if row == nil {
		t.Fatalf("simulate printed no row for ml/p:\n%s", out)
	}
	if diff := cmp.Diff([]string{"ml/p", "1/all", "c2", "False"}, row[:4]); diff != "" {
		t.Errorf("simulate's row (-want,+got):\n%s\n%s", diff, out)
	}
	if !strings.HasPrefix(row[4], "Misconfigured:") || !strings.Contains(row[4], `"Bogus" is not a valid label selector operator`) {
		t.Errorf("simulate's reason = %q, want Misconfigured naming the invalid operator", row[4])
	}
	out, err = run(t, "explain", "placement", "p", "-n", "ml", "-f", fleet)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"wants all feasible clusters; selects c2\n",
		`error: Misconfigured: decision group "canary": "Bogus" is not a valid label selector operator (the existing decisions are kept)`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}
}

// TestRefusedSayingWhy: input that would give no answer, a wrong one or a hang is refused with
// what is wrong with it.
func TestRefusedSayingWhy(t *testing.T) {
	hanging := filepath.Join(t.TempDir(), "hanging.kubeconfig")
	if err := os.WriteFile(hanging, []byte(`apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", "exec sleep 4"], interactiveMode: Never}}}]
contexts: [{name: hub, context: {cluster: hub, user: u}}]
current-context: hub
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		args []string
		want string
	}{
		"a fleet file of comments only": {
			args: []string{"get", "clusters", "-f", "testdata/comments-only.yaml"},
			want: "testdata/comments-only.yaml: nothing was read: it holds no object of a fleet",
		},
		"a List whose items are a string": {
			args: []string{"simulate", "-f", "testdata/list-items-string.yaml"},
			want: "testdata/list-items-string.yaml, document 1: List: items is a string, not a sequence",
		},
		"an exec credential plugin that never answers": {
			args: []string{"install", "crds", "--side", "hub", "--kubeconfig", hanging, "--request-timeout", "1s"},
			want: `the kubeconfig's exec credential plugin "/bin/sh -c exec sleep 4" did not answer within 1s`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestMachineTypeTooLarge: a machine type that no pool node of it can hold is not ready, as
// the machine controller would report it, and has no machine reserved.
func TestMachineTypeTooLarge(t *testing.T) {
	out, err := run(t, "get", "machinetypes", "-A", "-f", "testdata/machinetype-too-large.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"CLUSTER", "GROUP", "TYPE", "CPU", "MEMORY", "GPU", "MAXIMUM", "RESERVED", "USED", "WAITING", "READY"},
		{"cluster1", "general-machine", "huge", "400", "128Gi", "-", "1", "0", "0", "0", "false"},
	}
	if diff := cmp.Diff(want, ut.TableRows(out)); diff != "" {
		t.Errorf("get machinetypes (-want,+got):\n%s\n%s", diff, out)
	}
}
