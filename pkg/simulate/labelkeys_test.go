package simulate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// acceleratorIntent requires the node label accel (outside the default prefixes) to be in
// values, or not in them with notIn.
func acceleratorIntent(name, op string) string {
	return `
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata: {name: ` + name + `, namespace: ml}
spec:
  placementRef: {name: ` + name + `}
  consumers:
  - name: trainer
    target: {apiVersion: batch/v1, kind: Job, name: trainer, container: trainer}
    requirements:
    - name: accel
      feature: {key: accel, operator: ` + op + `, values: [a100]}`
}

func acceleratorNode(cluster, name, accel string) string {
	return `
apiVersion: v1
kind: Node
metadata:
  name: ` + name + `
  labels: {fleetfit.io/cluster: ` + cluster + `, accel: ` + accel + `}
status:
  allocatable: {cpu: "8", memory: 64Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]`
}

// TestSimulatedInventoriesReportTheIntentsKeys: inventories built from Nodes report the label
// keys of the fleet's intents, as agents do once the hub asks, and say so; an inventory given
// as such without reportedLabels reports the default prefixes only, so a requirement on
// another label is unknown there, whatever its operator.
func TestSimulatedInventoriesReportTheIntentsKeys(t *testing.T) {
	legacy := `
apiVersion: fleetfit.io/v1alpha1
kind: ClusterInventory
metadata: {name: c3, namespace: c3}
status:
  observedAt: "2026-03-01T12:00:00Z"
  nodeCount: 1
  readyNodeCount: 1
  shapeCount: 1
  nodeShapes:
  - name: s
    nodeCount: 1
    schedulable: true
    labels: {accel: t4}
    allocatable: {cpu: "8", pods: "110"}
    free: [{count: 1, resources: {cpu: "8", pods: "110"}}]`
	f := fleetOf(t, setAndBinding, cluster("c1"), cluster("c2"), cluster("c3"),
		acceleratorNode("c1", "n1", "a100"), acceleratorNode("c2", "n2", "t4"), legacy,
		placementDoc("in"), acceleratorIntent("in", "In"), placementDoc("notin"), acceleratorIntent("notin", "NotIn"))

	for _, inv := range f.Inventories {
		want := &fleetfitv1alpha1.ReportedLabels{Prefixes: inventory.DefaultFeatureLabelPrefixes, Keys: []string{"accel"}}
		if inv.Namespace == "c3" {
			want = nil
		}
		if diff := cmp.Diff(want, inv.Status.ReportedLabels); diff != "" {
			t.Errorf("%s reported labels (-want,+got):\n%s", inv.Namespace, diff)
		}
	}

	res := run(t, f)
	want := map[string][]string{"ml/in": {"c1"}, "ml/notin": {"c2"}}
	if diff := cmp.Diff(want, selected(res)); diff != "" {
		t.Errorf("decisions (-want,+got):\n%s", diff)
	}
	for _, r := range res.Placements {
		for _, v := range r.Explanation.Clusters {
			if v.Name != "c3" {
				continue
			}
			if want := "cluster c3 does not report label accel yet"; !strings.Contains(v.Reason, want) {
				t.Errorf("%s: c3's verdict %q, want it to say %q", r.Key(), v.Reason, want)
			}
		}
	}
	for _, in := range res.Intents {
		if c := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionScheduled); c == nil || c.Status != "True" {
			t.Errorf("intent %s: Scheduled = %+v, want True", in.Name, c)
		}
	}
}
