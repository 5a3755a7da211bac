package simulate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetfit/fleetfit/pkg/inventory"
)

func TestBuildInventoriesErrors(t *testing.T) {
	inv := `
apiVersion: fleetfit.io/v1alpha1
kind: ClusterInventory
metadata: {name: c1, namespace: c1}`
	pod := func(marked, node string) string {
		doc := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: app\n"
		if marked != "" {
			doc += "  labels: {fleetfit.io/cluster: " + marked + "}\n"
		}
		return doc + "spec: {nodeName: '" + node + "', containers: [{name: web, image: web}]}"
	}
	node := func(c, name string) string { return gpuNode(c, name, "1", "1") }
	cases := map[string]struct {
		docs []string
		want string
	}{
		"nodes of an unknown cluster": {
			docs: []string{node("c9", "node-1")},
			want: `Node "node-1" (fleet.yaml, document 1) is marked fleetfit.io/cluster=c9, but there is no ManagedCluster "c9": add it, or fix the mark`,
		},
		"nodes and an inventory": {
			docs: []string{cluster("c1"), inv, node("c1", "node-1")},
			want: `cluster "c1" has both Nodes and a ClusterInventory (fleet.yaml, document 2): give one or the other`,
		},
		"an inventory of no cluster": {
			docs: []string{inv},
			want: `ClusterInventory "c1/c1" (fleet.yaml, document 1): there is no ManagedCluster "c1" (an inventory lives in its cluster's namespace)`,
		},
		"a pod of no cluster": {
			docs: []string{cluster("c1"), node("c1", "node-1"), pod("", "elsewhere")},
			want: `Pod "app/web" (fleet.yaml, document 3) belongs to no cluster of the files: mark it fleetfit.io/cluster=<cluster> or bind it (spec.nodeName) to one of the files' nodes`,
		},
		"a pod marked for one cluster, bound to another's node": {
			docs: []string{cluster("c1"), cluster("c2"), node("c1", "node-1"), node("c2", "node-2"), pod("c1", "node-2")},
			want: `Pod "app/web" (fleet.yaml, document 5) is marked fleetfit.io/cluster=c1 but bound (spec.nodeName) to node "node-2" of cluster c2: fix the mark or the node`,
		},
		"a pod bound to a node that is not in the files": {
			docs: []string{cluster("c1"), node("c1", "node-1"), pod("c1", "node-9")},
			want: `Pod "app/web" (fleet.yaml, document 3) is bound (spec.nodeName) to node "node-9", which is no Node of the files: add the node, marked fleetfit.io/cluster=c1, or fix spec.nodeName`,
		},
		"a pod of a cluster given by its inventory": {
			docs: []string{cluster("c1"), inv, pod("c1", "")},
			want: `Pod "app/web" (fleet.yaml, document 3) is marked fleetfit.io/cluster=c1, a cluster given by its ClusterInventory, which already counts its pods: remove the pod, or give the cluster's Nodes instead of its inventory`,
		},
		"a pod of a cluster without nodes": {
			docs: []string{cluster("c1"), pod("c1", "")},
			want: `Pod "app/web" (fleet.yaml, document 2) is marked fleetfit.io/cluster=c1, but the files have no Node of cluster c1: add its Nodes`,
		},
		"a node twice": {
			docs: []string{cluster("c1"), cluster("c2"), node("c1", "node-1"), node("c2", "node-1")},
			want: `Node "node-1" appears twice: in fleet.yaml, document 3 and in fleet.yaml, document 4; give each object a name of its own, or remove one`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &Fleet{}
			err := f.Decode(t.Context(), strings.NewReader(strings.Join(tc.docs, "\n---\n")), "fleet.yaml")
			if err == nil {
				err = f.BuildInventories(inventory.DefaultConfig(), at)
			}
			if err == nil {
				t.Fatalf("the fleet was accepted, want the error %q", tc.want)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestPendingPodOfACluster: a pod marked for a cluster of the file and bound to no node is
// pending: it takes nothing.
func TestPendingPodOfACluster(t *testing.T) {
	pending := "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: app, labels: {fleetfit.io/cluster: c1}}\nspec: {containers: [{name: web, image: web, resources: {requests: {cpu: '1'}}}]}"
	f := fleetOf(t, cluster("c1"), gpuNode("c1", "a100", "32", "4"), pending)
	free := map[string]string{}
	for _, r := range f.Inventories[0].Status.Resources {
		free[string(r.Name)] = r.Free.String()
	}
	if free["cpu"] != "32" {
		t.Errorf("free cpu = %q, want 32: a pending pod takes nothing", free["cpu"])
	}
}

// TestObservationsInTheFuture: an inventory observed later than the machine's clock (beyond a
// few minutes) is refused, so that it cannot move the simulation's time; one within the slack
// sets it.
func TestObservationsInTheFuture(t *testing.T) {
	fleet := func(observed string) string {
		return cluster("c1") + "\n---\n" + cluster("c2") + `
---
apiVersion: fleetfit.io/v1alpha1
kind: ClusterInventory
metadata: {name: c1, namespace: c1}
status: {observedAt: "2026-03-01T11:00:00Z"}
---
apiVersion: fleetfit.io/v1alpha1
kind: ClusterInventory
metadata: {name: c2, namespace: c2}
status: {observedAt: "` + observed + `"}`
	}
	cases := map[string]struct {
		observed string
		wantErr  string
		wantTime time.Time
	}{
		"year 9999": {
			observed: "9999-01-01T00:00:00Z",
			wantErr:  `fleet.yaml, document 4: ClusterInventory "c2/c2": status.observedAt 9999-01-01T00:00:00Z is in the future (this machine's clock says 2026-03-01T12:00:00Z): a fleet file is simulated at its newest observation, so fix the time, or remove it`,
		},
		"an hour ahead": {
			observed: "2026-03-01T13:00:00Z",
			wantErr:  `fleet.yaml, document 4: ClusterInventory "c2/c2": status.observedAt 2026-03-01T13:00:00Z is in the future (this machine's clock says 2026-03-01T12:00:00Z): a fleet file is simulated at its newest observation, so fix the time, or remove it`,
		},
		"a minute ahead, within the slack": {
			observed: "2026-03-01T12:01:00Z",
			wantTime: at.Add(time.Minute),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fleet.yaml")
			if err := os.WriteFile(path, []byte(fleet(tc.observed)), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := ReadFiles(t.Context(), []string{path}, ReadOptions{Now: at})
			if tc.wantErr != "" {
				if err == nil {
					t.Fatalf("ReadFiles accepted the file, want the error %q", tc.wantErr)
				}
				if diff := cmp.Diff(tc.wantErr, strings.ReplaceAll(err.Error(), path, "fleet.yaml")); diff != "" {
					t.Errorf("error (-want,+got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.LatestObservation(); !got.Equal(tc.wantTime) {
				t.Errorf("the fleet is observed at %v, want %v", got, tc.wantTime)
			}
		})
	}
}

// TestClusterWithoutNodesInAFile: a cluster the file gives no nodes for is rejected for hardware
// requirements because the file lacks them — not because an agent is missing.
func TestClusterWithoutNodesInAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	docs := []string{setAndBinding, cluster("c1"), cluster("c2"), gpuNode("c1", "a100", "32", "4"), placementDoc("p"), gpuIntent("p", "8")}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "\n---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFiles(t.Context(), []string{path}, ReadOptions{Now: at})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, f)
	got := map[string]string{}
	for _, v := range res.Placements[0].Explanation.Clusters {
		got[v.Name] = v.RejectedBy + ": " + v.Reason
	}
	want := map[string]string{
		"c1": "HardwareFit: consumer p/trainer: no schedulable node with nvidia.com/gpu.product In [A100] has 8 nvidia.com/gpu free; the best has 4",
		"c2": "HardwareFit: " + filesNoInventory,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want,+got):\n%s", diff)
	}
	for _, in := range res.Intents {
		for _, c := range in.Status.Conditions {
			if strings.Contains(c.Message, "fleetfit agent") {
				t.Errorf("intent %s condition %s says %q, want no word of an agent for a fleet file", in.Name, c.Type, c.Message)
			}
		}
	}
}

// TestFailedLayoutKeepsDecisions: when a cycle fails after the scheduler chose (a decision group
// whose selector is invalid), the explanation shows the decisions the placement keeps, as
// simulate's decisions do, and says why.
func TestFailedLayoutKeepsDecisions(t *testing.T) {
	p := `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: p, namespace: ml}
spec:
  numberOfClusters: 2
  decisionStrategy:
    groupStrategy:
      decisionGroups:
      - groupName: canary
        groupClusterSelector:
          labelSelector:
            matchExpressions: [{key: canary, operator: Bogus}]`
	decision := `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: PlacementDecision
metadata:
  name: p-decision-1
  namespace: ml
  labels: {cluster.open-cluster-management.io/placement: p}
status:
  decisions: [{clusterName: c2, reason: ""}]`
	f := fleetOf(t, setAndBinding, cluster("c1"), cluster("c2"), p, decision)
	res := run(t, f)
	r := res.Placements[0]
	var explained []string
	for _, d := range r.Explanation.Decisions {
		explained = append(explained, d.ClusterName)
	}
	if diff := cmp.Diff(selected(res)["ml/p"], explained); diff != "" {
		t.Errorf("explained decisions differ from the placement's (-placement,+explained):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c2"}, explained); diff != "" {
		t.Errorf("explained decisions (-want,+got):\n%s", diff)
	}
	if !strings.Contains(r.Explanation.Error, "Bogus") {
		t.Errorf("explanation error = %q, want the failure naming the invalid operator", r.Explanation.Error)
	}
}

// TestNothingRead: a fleet file that gives no object is refused, naming the file, rather than
// read as a fleet with nothing in it; one with objects is read.
func TestNothingRead(t *testing.T) {
	cases := map[string]struct {
		text    string
		wantErr bool
	}{
		"an empty file":               {text: "", wantErr: true},
		"comments only":               {text: "# a fleet\n---\n# to come\n", wantErr: true},
		"an empty List":               {text: "apiVersion: v1\nkind: List\nitems: []", wantErr: true},
		"a Namespace only":            {text: "apiVersion: v1\nkind: Namespace\nmetadata: {name: ml}", wantErr: true},
		"a cluster, and comments too": {text: "# a fleet\n---\n" + cluster("c1")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "fleet.yaml")
			if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFiles(t.Context(), []string{path}, ReadOptions{Now: at})
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("ReadFiles: %v", err)
				}
				return
			}
			want := "fleet.yaml: nothing was read: it holds no object of a fleet (it is empty, or holds only comments, empty Lists or Namespaces, which are ignored); a fleet file holds " + supportedKinds
			if err == nil {
				t.Fatalf("ReadFiles accepted the file, want the error %q", want)
			}
			if diff := cmp.Diff(want, strings.ReplaceAll(err.Error(), path, "fleet.yaml")); diff != "" {
				t.Errorf("error (-want,+got):\n%s", diff)
			}
		})
	}
}
