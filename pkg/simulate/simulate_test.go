package simulate

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

var at = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fleetOf decodes documents and builds their inventories at the test's time.
func fleetOf(t *testing.T, docs ...string) *Fleet {
	t.Helper()
	f := &Fleet{}
	if err := f.Decode(t.Context(), strings.NewReader(strings.Join(docs, "\n---\n")), "test"); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if err := f.BuildInventories(inventory.DefaultConfig(), at); err != nil {
		t.Fatalf("BuildInventories: %v", err)
	}
	return f
}

func run(t *testing.T, f *Fleet) *Result {
	t.Helper()
	res, err := Run(t.Context(), f, Options{Now: at})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// selected returns each placement's decided clusters, and "skipped: ..." for the skipped.
func selected(res *Result) map[string][]string {
	out := map[string][]string{}
	for _, r := range res.Placements {
		out[r.Key()] = []string{}
		if r.Skipped != "" {
			out[r.Key()] = []string{"skipped"}
		}
		for _, d := range r.Decisions {
			for _, cd := range d.Status.Decisions {
				out[r.Key()] = append(out[r.Key()], cd.ClusterName)
			}
		}
	}
	return out
}

const setAndBinding = `
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata: {name: default}
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata: {name: default, namespace: ml}
spec: {clusterSet: default}`

func cluster(name string) string {
	return `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: ` + name + `
  labels: {cluster.open-cluster-management.io/clusterset: default}
spec: {hubAcceptsClient: true}`
}

func gpuNode(cluster, name, cpu, gpus string) string {
	return `
apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels: {fleetfit.io/cluster: ` + cluster + `, nvidia.com/gpu.product: A100}
status:
  allocatable: {cpu: "` + cpu + `", memory: 64Gi, pods: "110", nvidia.com/gpu: "` + gpus + `"}
  conditions: [{type: Ready, status: "True"}]`
}

func placementDoc(name string) string {
	return `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: ` + name + `, namespace: ml}
spec: {numberOfClusters: 1}`
}

func gpuIntent(name, gpus string) string {
	return `
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata: {name: ` + name + `, namespace: ml}
spec:
  placementRef: {name: ` + name + `}
  consumers:
  - name: trainer
    target: {apiVersion: batch/v1, kind: Job, name: trainer, container: trainer}
    replicas: 1
    requirements:
    - name: gpu
      resource: {name: nvidia.com/gpu, limits: ` + gpus + `}
    - name: a100
      feature: {key: nvidia.com/gpu.product, values: [A100]}`
}

// TestExampleFleet schedules deploy/examples/fleet.yaml, the documented fleet file.
func TestExampleFleet(t *testing.T) {
	f, err := ReadFiles(t.Context(), []string{"../../deploy/examples/fleet.yaml"}, ReadOptions{Now: at})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, f)
	want := map[string][]string{"demo/fwall": {"cluster2"}, "demo/training": {}}
	if diff := cmp.Diff(want, selected(res)); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
	training := res.Placements[1]
	if c := meta.FindStatusCondition(training.Placement.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied); c == nil || c.Reason != "NoManagedClusterMatched" {
		t.Errorf("training's Satisfied condition = %+v, want reason NoManagedClusterMatched", c)
	}
	var reason string
	for _, v := range training.Explanation.Clusters {
		if v.Name == "cluster1" {
			reason = v.RejectedBy + ": " + v.Reason
		}
	}
	// The A100 node of cluster1 has 32 cores, 26 taken by a pod of the file.
	if want := "HardwareFit: consumer training/trainer: no schedulable node with nvidia.com/gpu.product In [A100] has 8 cpu free; the best has 6"; reason != want {
		t.Errorf("cluster1's verdict for training = %q, want %q", reason, want)
	}
	for _, in := range res.Intents {
		if c := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionValid); c == nil || c.Status != "True" {
			t.Errorf("intent %s: Valid = %+v, want True", in.Name, c)
		}
	}
}

// TestExamplesAreFleetFiles: every example under deploy/examples reads as a fleet file, each
// object checked as its API server and the hub's admission check it, and the machine-type
// example is valid once placed in the example fleet (whose inventories report the group).
func TestExamplesAreFleetFiles(t *testing.T) {
	paths, err := filepath.Glob("../../deploy/examples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples found (%v)", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := ReadFiles(t.Context(), []string{path}, ReadOptions{Now: at}); err != nil {
				t.Error(err)
			}
		})
	}
	f, err := ReadFiles(t.Context(), []string{"../../deploy/examples/fleet.yaml", "../../deploy/examples/machinetype.yaml"}, ReadOptions{Now: at})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, f)
	for _, in := range res.Intents {
		if c := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionValid); c == nil || c.Status != "True" {
			t.Errorf("intent %s: Valid = %+v, want True", in.Name, c)
		}
	}
	var render *fleetfitv1alpha1.HPAIntent
	for _, in := range f.Intents {
		if in.Name == "render" {
			render = in
		}
	}
	if render == nil {
		t.Fatal("the example fleet with machinetype.yaml has no HPAIntent render")
	}
	want := &fleetfitv1alpha1.MachineTypeRequirement{Group: "general-machine", Name: "compute-xlarge"}
	if diff := cmp.Diff(want, render.Spec.Consumers[0].Requirements[0].MachineType); diff != "" {
		t.Errorf("render's machine type (-want,+got):\n%s", diff)
	}
}

// TestReservations: two placements that each need 3 of the 4 GPUs of the only A100 node do not
// both get it: the first one's capacity is held for it when the second is scheduled.
func TestReservations(t *testing.T) {
	f := fleetOf(t, setAndBinding, cluster("c1"), gpuNode("c1", "a100", "32", "4"),
		placementDoc("first"), gpuIntent("first", "3"), placementDoc("second"), gpuIntent("second", "3"))
	res := run(t, f)
	want := map[string][]string{"ml/first": {"c1"}, "ml/second": {}}
	if diff := cmp.Diff(want, selected(res)); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
}

// TestExistingDecisionsKept: a placement whose intent the hub finds invalid is not scheduled
// and keeps the decisions the fleet holds; the intent says why.
func TestExistingDecisionsKept(t *testing.T) {
	invalid := gpuIntent("first", "1") + `
  workload:
    manifests:
    - apiVersion: batch/v1
      kind: Job
      metadata: {name: not-the-trainer}
      spec:
        template:
          spec:
            restartPolicy: Never
            containers: [{name: trainer, image: trainer}]`
	decision := `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: PlacementDecision
metadata:
  name: first-decision-1
  namespace: ml
  labels: {cluster.open-cluster-management.io/placement: first}
status:
  decisions: [{clusterName: c2, reason: ""}]`
	f := fleetOf(t, setAndBinding, cluster("c1"), cluster("c2"), gpuNode("c1", "a100", "32", "4"), gpuNode("c2", "other", "1", "0"),
		placementDoc("first"), invalid, decision)
	res := run(t, f)
	if diff := cmp.Diff(map[string][]string{"ml/first": {"skipped", "c2"}}, selected(res)); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
	c := meta.FindStatusCondition(res.Intents[0].Status.Conditions, fleetfitv1alpha1.ConditionValid)
	if c == nil || c.Status != "False" || !strings.Contains(c.Message, "trainer") {
		t.Errorf("Valid = %+v, want False naming the missing target", c)
	}
}

// TestDefaults: objects get the defaults the hub's API server gives them.
func TestDefaults(t *testing.T) {
	f := fleetOf(t, placementDoc("p"), gpuIntent("p", "1"))
	if got := f.Placements[0].Spec.ScoreRateLimit; got != "1m" {
		t.Errorf("scoreRateLimit = %q, want the CRD's default 1m", got)
	}
	if got := f.Placements[0].Spec.SortBy; got != clusterv1beta1.PlacementSortByClusterName {
		t.Errorf("sortBy = %q, want the CRD's default ClusterName", got)
	}
	req := f.Intents[0].Spec.Consumers[0].Requirements[1]
	if req.Mandatory == nil || !*req.Mandatory || req.Feature == nil || req.Feature.Operator != "In" {
		t.Errorf("requirement = %+v, want the defaults mandatory=true and operator In", req)
	}
}

// TestInventoryFromNodes: the inventory built from the file's nodes and pods is the agent's.
func TestInventoryFromNodes(t *testing.T) {
	pod := `
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  nodeName: a100
  containers: [{name: t, image: t, resources: {limits: {nvidia.com/gpu: "3"}, requests: {cpu: "30"}}}]
status: {phase: Running}`
	f := fleetOf(t, cluster("c1"), gpuNode("c1", "a100", "32", "4"), pod)
	st := f.Inventories[0].Status
	got := map[string]string{}
	for _, r := range st.Resources {
		got[string(r.Name)] = r.Free.String()
	}
	want := map[string]string{"cpu": "2", "memory": "64Gi", "nvidia.com/gpu": "1", "pods": "109"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("free (-want,+got):\n%s", diff)
	}
	if !st.ObservedAt.Time.Equal(at) || f.LatestObservation() != at {
		t.Errorf("observedAt = %v, want %v", st.ObservedAt, at)
	}
}

// TestSplitExample schedules deploy/examples/split.yaml in the example fleet: web's 12
// replicas of 2 cores and 4Gi are divided by capacity over as few clusters as hold them, in
// score order, no share beyond what the cluster's nodes hold replica by replica, and explain
// says what each cluster could hold.
func TestSplitExample(t *testing.T) {
	f, err := ReadFiles(t.Context(), []string{"../../deploy/examples/fleet.yaml", "../../deploy/examples/split.yaml"}, ReadOptions{Now: at})
	if err != nil {
		t.Fatal(err)
	}
	res := run(t, f)
	var web *fleetfitv1alpha1.HPAIntent
	for _, in := range res.Intents {
		if in.Name == "web" {
			web = in
		}
	}
	if web == nil || web.Status.Split == nil {
		t.Fatalf("intent web has no split status: %+v", web)
	}
	var placed int32
	got := map[string]int32{}
	for _, sh := range web.Status.Split.Shares {
		got[sh.ClusterName] = sh.Replicas
		placed += sh.Replicas
	}
	// cluster1 holds 4 (on its 8-core CPU node: its A100 node is tainted for GPU pods), so
	// cluster3, next by score, takes the other 8; cluster2 is not needed.
	if diff := cmp.Diff(map[string]int32{"cluster1": 4, "cluster3": 8}, got); diff != "" {
		t.Errorf("shares (-want,+got):\n%s", diff)
	}
	if placed != 12 || web.Status.Split.Unplaced != 0 {
		t.Errorf("placed %d, unplaced %d; want 12 and 0", placed, web.Status.Split.Unplaced)
	}
	var explained bool
	for _, p := range res.Placements {
		for _, sp := range p.Explanation.Splits {
			explained = true
			for _, c := range sp.Clusters {
				if c.Share > 0 && c.Share > c.Capacity {
					t.Errorf("%s's share %d is more than it holds (%d)", c.Name, c.Share, c.Capacity)
				}
			}
		}
	}
	if !explained {
		t.Error("no explanation shows the split")
	}
	if diff := cmp.Diff(map[string][]string{"demo/fwall": {"cluster2"}, "demo/training": {}, "demo/web": {"cluster1", "cluster3"}}, selected(res)); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
}
