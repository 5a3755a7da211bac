package simulate

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// decidedC1 is a PlacementDecision of placement p that decides c1.
const decidedC1 = `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: PlacementDecision
metadata:
  name: p-decision-1
  namespace: ml
  labels: {cluster.open-cluster-management.io/placement: p}
status:
  decisions: [{clusterName: c1, reason: ""}]`

// TestDecisionsOfAFile: a fleet file's decisions mean what they mean on the hub, and simulate
// and explain say and do the same: a decided cluster whose inventory went stale stays decided
// (the explanation says existing decisions are kept, and selects it), unless the file says the
// intent never shaped that placement.
func TestDecisionsOfAFile(t *testing.T) {
	cases := map[string]struct {
		docs []string
		// staleC1 makes c1's inventory 11 minutes old.
		staleC1      bool
		want         []string
		wantC1Note   string
		wantSelected map[string]bool
	}{
		"a decided cluster with a stale inventory stays": {
			docs:         []string{decidedC1},
			staleC1:      true,
			want:         []string{"c1"},
			wantC1Note:   "existing ones are kept",
			wantSelected: map[string]bool{"c1": true, "c2": false},
		},
		"without decisions, a cluster with a stale inventory is not chosen": {
			staleC1:      true,
			want:         []string{"c2"},
			wantC1Note:   "existing ones are kept",
			wantSelected: map[string]bool{"c1": false, "c2": true},
		},
		"an intent whose status says it shaped another placement is new to this one": {
			docs:         []string{decidedC1},
			staleC1:      true,
			want:         []string{"c2"},
			wantC1Note:   "existing ones are kept",
			wantSelected: map[string]bool{"c1": false, "c2": true},
		},
		"a decided cluster with a fresh inventory stays": {
			docs:         []string{decidedC1},
			want:         []string{"c1"},
			wantSelected: map[string]bool{"c1": true, "c2": false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			intent := gpuIntent("p", "1")
			if strings.HasPrefix(name, "an intent whose status") {
				intent += "\nstatus: {scheduledPlacement: other}"
			}
			docs := append([]string{setAndBinding, cluster("c1"), cluster("c2"), gpuNode("c1", "a", "32", "4"), gpuNode("c2", "b", "32", "4"),
				placementDoc("p"), intent}, tc.docs...)
			f := fleetOf(t, docs...)
			f.fromFiles = true
			if tc.staleC1 {
				for _, inv := range f.Inventories {
					if inv.Namespace == "c1" {
						inv.Status.ObservedAt = metav1.NewTime(at.Add(-11 * time.Minute))
					}
				}
			}
			res := run(t, f)
			if diff := cmp.Diff(map[string][]string{"ml/p": tc.want}, selected(res)); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s", diff)
			}
			gotSelected := map[string]bool{}
			gotNote := ""
			for _, v := range res.Placements[0].Explanation.Clusters {
				gotSelected[v.Name] = v.Selected
				if v.Name == "c1" {
					gotNote = v.Note
				}
			}
			if diff := cmp.Diff(tc.wantSelected, gotSelected); diff != "" {
				t.Errorf("explanation's selected clusters (-want,+got):\n%s", diff)
			}
			if !strings.Contains(gotNote, tc.wantC1Note) || (tc.wantC1Note == "") != (gotNote == "") {
				t.Errorf("explanation's note on c1 = %q, want one saying %q", gotNote, tc.wantC1Note)
			}
		})
	}
}

// TestNoClusterAskedFor: an intent of a placement with numberOfClusters: 0 says that none was
// asked for, not that no cluster can host it.
func TestNoClusterAskedFor(t *testing.T) {
	cases := map[string]struct {
		placement string
		want      string
	}{
		"numberOfClusters: 0": {
			placement: strings.Replace(placementDoc("p"), "numberOfClusters: 1", "numberOfClusters: 0", 1),
			want:      "NoClusterRequested: Placement p asks for no cluster (spec.numberOfClusters: 0), so none is decided: set numberOfClusters, or leave it out for every cluster it selects",
		},
		"numberOfClusters: 1 and no room": {
			placement: placementDoc("p"),
			want:      "NoFeasibleCluster: no cluster can host Placement p: c1: consumer p/trainer: no schedulable node with nvidia.com/gpu.product In [A100] has 8 nvidia.com/gpu free; the best has 4",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := fleetOf(t, setAndBinding, cluster("c1"), gpuNode("c1", "a", "32", "4"), tc.placement, gpuIntent("p", "8"))
			res := run(t, f)
			c := meta.FindStatusCondition(res.Intents[0].Status.Conditions, fleetfitv1alpha1.ConditionScheduled)
			if c == nil {
				t.Fatal("the intent has no Scheduled condition")
			}
			if diff := cmp.Diff(tc.want, c.Reason+": "+c.Message); diff != "" {
				t.Errorf("Scheduled (-want,+got):\n%s", diff)
			}
		})
	}
}
