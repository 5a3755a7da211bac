package ui

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	"github.com/fleetfit/fleetfit/pkg/simulate"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func mustQuery(t testing.TB, q string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(q)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// whatIfPlacement asks for 4 A100 GPUs and 64Gi on one node: only cluster1's A100 node has them.
const whatIfPlacement = `apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: big-training, namespace: demo}
spec: {numberOfClusters: 1}
---
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata: {name: big-training, namespace: demo}
spec:
  placementRef: {name: big-training}
  consumers:
  - name: trainer
    target: {apiVersion: apps/v1, kind: Deployment, name: trainer, container: trainer}
    requirements:
    - {name: gpu, resource: {name: nvidia.com/gpu, limits: "4"}}
    - {name: memory, resource: {name: memory, requests: 64Gi, limits: 64Gi}}
    - {name: a100, feature: {key: nvidia.com/gpu.product, operator: In, values: [A100]}}
`

// TestExplainIsTheHubsDebugJSON: the explain endpoint answers with the JSON of the hub's
// /debug/placements/ endpoint, where HardwareFit's reason names what the rejected cluster lacks.
func TestExplainIsTheHubsDebugJSON(t *testing.T) {
	h := newTestServer(exampleFleetLoader(t, nil)).Handler()
	w := do(t, h, "GET", "/api/explain/demo/training", "")
	got := decode[placement.DebugResult](t, w, http.StatusOK)
	if got.Placement != "demo/training" || len(got.Clusters) != 3 {
		t.Fatalf("explanation: %+v", got)
	}
	c1 := got.Clusters[0]
	if c1.Name != "cluster1" || c1.RejectedBy != "HardwareFit" || !strings.Contains(c1.Reason, "has 8 cpu free; the best has 6") {
		t.Errorf("cluster1: %+v", c1)
	}
	if at, err := time.Parse(time.RFC3339Nano, w.Header().Get(ReadAtHeader)); err != nil || !at.Equal(readAt) {
		t.Errorf("%s: %q (%v)", ReadAtHeader, w.Header().Get(ReadAtHeader), err)
	}
	// The JSON keeps OCM's names, which OCM's debugger clients read.
	for _, key := range []string{`"filteredPiplieResults"`, `"clusters"`, `"rejectedBy":"HardwareFit"`} {
		if !strings.Contains(w.Body.String(), key) {
			t.Errorf("the answer lacks %s: %s", key, w.Body.String())
		}
	}
	// Asked again within max-age, the answer is the same one.
	if again := do(t, h, "GET", "/api/explain/demo/training", ""); again.Code != http.StatusOK || again.Body.String() != w.Body.String() {
		t.Errorf("explained again: %d %s", again.Code, again.Body.String())
	}
	got = decode[placement.DebugResult](t, do(t, h, "GET", "/api/explain/demo/nothing", ""), http.StatusNotFound)
	if !strings.Contains(got.Error, `placement "nothing" not found`) {
		t.Errorf("missing placement: %+v", got)
	}
}

// TestWhatIfAnswersAsSimulate: a posted Placement and HPAIntent are decided as `fleetfit
// simulate -f fleet.yaml -f posted.yaml` decides them.
func TestWhatIfAnswersAsSimulate(t *testing.T) {
	var reads atomic.Int32
	h := newTestServer(exampleFleetLoader(t, &reads)).Handler()
	got := decode[WhatIf](t, do(t, h, "POST", "/api/whatif", whatIfPlacement), http.StatusOK)

	posted := filepath.Join(t.TempDir(), "posted.yaml")
	if err := os.WriteFile(posted, []byte(whatIfPlacement), 0o600); err != nil {
		t.Fatal(err)
	}
	files, err := simulate.ReadFiles(t.Context(), []string{exampleFleet, posted}, simulate.ReadOptions{Now: readAt})
	if err != nil {
		t.Fatal(err)
	}
	res, err := simulate.Run(t.Context(), files, simulate.Options{Now: readAt})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range res.Placements {
		if r.Key() == "demo/big-training" {
			for _, d := range r.Decisions {
				for _, cd := range d.Status.Decisions {
					want = append(want, cd.ClusterName)
				}
			}
		}
	}
	if len(got.Placements) != 1 || got.Placements[0].Placement != "demo/big-training" {
		t.Fatalf("placements: %+v", got.Placements)
	}
	p := got.Placements[0]
	if diff := cmp.Diff(want, p.Clusters); diff != "" || p.Selected != "1/1" || p.Satisfied != "True" {
		t.Errorf("clusters (-simulate,+what-if):\n%s\n%+v", diff, p)
	}
	if diff := cmp.Diff([]string{"cluster1"}, p.Clusters); diff != "" {
		t.Errorf("clusters (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]WhatIfIntent{{Intent: "demo/big-training", Valid: "True", Scheduled: "True", Message: p.Explanation.Clusters[0].Reason}}, got.Intents,
		cmpIgnoreMessage); diff != "" {
		t.Errorf("intents (-want,+got):\n%s", diff)
	}
	if p.Explanation == nil || p.Explanation.Clusters[1].RejectedBy != "HardwareFit" {
		t.Errorf("explanation: %+v", p.Explanation)
	}

	// The snapshot is shared and not changed: the hub's fleet has no such placement.
	if w := do(t, h, "GET", "/api/explain/demo/big-training", ""); w.Code != http.StatusNotFound {
		t.Errorf("after a what-if, the posted placement is explained: %d %s", w.Code, w.Body.String())
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("the hub was read %d times within one max-age, want 1", n)
	}
}

var cmpIgnoreMessage = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Message" }, cmp.Ignore())

func TestWhatIfRefusesOtherKinds(t *testing.T) {
	h := newTestServer(exampleFleetLoader(t, nil)).Handler()
	cases := map[string]struct{ body, want string }{
		"a cluster":   {body: "apiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\nmetadata: {name: extra}\n", want: "post Placements and HPAIntents only"},
		"nothing":     {body: "# nothing\n", want: "post a Placement"},
		"not a fleet": {body: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", want: "ConfigMap"},
		"bad field":   {body: "apiVersion: cluster.open-cluster-management.io/v1beta1\nkind: Placement\nmetadata: {name: p, namespace: demo}\nspec: {numberOfClusterz: 1}\n", want: "numberOfClusterz"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decode[ErrorBody](t, do(t, h, "POST", "/api/whatif", tc.body), http.StatusBadRequest)
			if !strings.Contains(got.Message, tc.want) {
				t.Errorf("message %q lacks %q", got.Message, tc.want)
			}
		})
	}
}

// TestPlacements: each placement with its decided clusters and their scores, its intents'
// states as get placements names them, and their delivery per cluster.
func TestPlacements(t *testing.T) {
	fleet := &simulate.Fleet{}
	p := ut.MakePlacement("training", "demo").NumberOfClusters(2).Obj()
	p.Status.Conditions = []metav1.Condition{{Type: clusterv1beta1.PlacementConditionSatisfied, Status: "True", Reason: "AllDecisionsScheduled"}}
	fleet.Placements = []*clusterv1beta1.Placement{p, ut.MakePlacement("idle", "apps").Obj()}
	fleet.Decisions = []*clusterv1beta1.PlacementDecision{{
		ObjectMeta: metav1.ObjectMeta{Name: "training-decision-1", Namespace: "demo", Labels: map[string]string{clusterv1beta1.PlacementLabel: "training"}},
		Status: clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{
			{ClusterName: "cluster2", Score: 40}, {ClusterName: "cluster1", Score: 100},
		}},
	}}
	in := ut.MakeHPAIntent("training", "demo").Placement("training").Obj()
	in.Status.ScheduledPlacement = "training"
	in.Status.Conditions = []metav1.Condition{
		{Type: fleetfitv1alpha1.ConditionValid, Status: "True"},
		{Type: fleetfitv1alpha1.ConditionScheduled, Status: "True"},
		{Type: fleetfitv1alpha1.ConditionDelivered, Status: "False", Message: "cluster2: waiting for the work agent"},
	}
	in.Status.Clusters = []fleetfitv1alpha1.ClusterDelivery{
		{ClusterName: "cluster1", State: fleetfitv1alpha1.DeliveryAvailable, Message: "Deployment trainer: 2/2 ready"},
		{ClusterName: "cluster2", State: fleetfitv1alpha1.DeliveryPending, Message: "waiting for the work agent"},
	}
	fleet.Intents = []*fleetfitv1alpha1.HPAIntent{in}
	h := newTestServer(func(context.Context, ...string) (*simulate.Fleet, error) { return fleet, nil }).Handler()
	got := decode[Placements](t, do(t, h, "GET", "/api/placements", ""), http.StatusOK)
	want := []PlacementSummary{
		{Namespace: "apps", Name: "idle", Selected: "0/all", Satisfied: "Unknown", Reason: "-", Decisions: []DecidedCluster{}, Intents: []IntentSummary{}},
		{Namespace: "demo", Name: "training", Selected: "2/2", Satisfied: "True", Reason: "AllDecisionsScheduled",
			Decisions: []DecidedCluster{{Cluster: "cluster1", Score: 100}, {Cluster: "cluster2", Score: 40}},
			Intents:   []IntentSummary{{Name: "training", States: []string{"Scheduled", "NotDelivered"}, Message: "cluster2: waiting for the work agent", Delivery: in.Status.Clusters}}},
	}
	if diff := cmp.Diff(want, got.Items, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Created" }, cmp.Ignore()),
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".LastTransitionTime" }, cmp.Ignore())); diff != "" {
		t.Errorf("placements (-want,+got):\n%s", diff)
	}
	got = decode[Placements](t, do(t, h, "GET", "/api/placements?name=demo/", ""), http.StatusOK)
	if got.Total != 2 || got.Matching != 1 || len(got.Items) != 1 {
		t.Errorf("filtered: total %d, matching %d, %d items", got.Total, got.Matching, len(got.Items))
	}
}

// TestSnapshotsAreShared: within max-age every request of a view reads one snapshot, requests
// at the same moment share one read, and a read that failed is not kept.
func TestSnapshotsAreShared(t *testing.T) {
	var reads atomic.Int32
	load := exampleFleetLoader(t, nil)
	release := make(chan struct{})
	fail := atomic.Bool{}
	now := readAt
	var mu sync.Mutex
	s := New(Options{
		Load: func(ctx context.Context, kinds ...string) (*simulate.Fleet, error) {
			reads.Add(1)
			<-release
			if fail.Load() {
				return nil, context.DeadlineExceeded
			}
			return load(ctx, kinds...)
		},
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
	})
	h := s.Handler()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { decode[Fleet](t, do(t, h, "GET", "/api/fleet", ""), http.StatusOK) })
	}
	for reads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // let the other requests join the read
	close(release)
	wg.Wait()
	decode[Fleet](t, do(t, h, "GET", "/api/fleet?gpus=1", ""), http.StatusOK)
	if n := reads.Load(); n != 1 {
		t.Errorf("9 requests within max-age read the hub %d times, want 1", n)
	}
	// Placements are another view: one more read.
	decode[Placements](t, do(t, h, "GET", "/api/placements", ""), http.StatusOK)
	if n := reads.Load(); n != 2 {
		t.Errorf("reads after the placements: %d, want 2", n)
	}
	mu.Lock()
	now = now.Add(DefaultMaxAge)
	mu.Unlock()
	fail.Store(true)
	decode[ErrorBody](t, do(t, h, "GET", "/api/fleet", ""), http.StatusBadGateway)
	decode[ErrorBody](t, do(t, h, "GET", "/api/fleet", ""), http.StatusBadGateway)
	if n := reads.Load(); n != 4 {
		t.Errorf("reads after two failures: %d, want 4 (a failed read is not kept)", n)
	}
}
