package hardwarefit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// reportingKeys returns a cluster whose agent reports the default prefixes and, besides, the
// node labels of keys, as agents do once the hub has asked for them.
func reportingKeys(t testing.TB, name string, keys []string, nodes []*corev1.Node) cluster {
	t.Helper()
	cfg := inventory.DefaultConfig()
	cfg.FeatureLabelKeys = keys
	c, err := inventory.NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		c.UpsertNode(n)
	}
	inv := st.MakeInventory(name, now.Add(-time.Minute), nil)
	observed := inv.Status.ObservedAt
	inv.Status = c.Summarize()
	inv.Status.ObservedAt = observed
	return cluster{name: name, inv: inv}
}

// legacy drops reportedLabels from the cluster's report, as an agent older than the field
// writes it.
func (c cluster) legacy() cluster {
	c.inv = c.inv.DeepCopy()
	c.inv.Status.ReportedLabels = nil
	return c
}

// TestFilterUnreportedLabels: a requirement on a node label the cluster does not report is
// unknown there, never met or failed by the label's absence: the cluster is not chosen anew,
// whatever the operator, and the reason names the cluster and the label.
func TestFilterUnreportedLabels(t *testing.T) {
	const upgrade = " (its fleetfit agent does not say which labels it reports, so only the default prefixes count: upgrade the agent)"
	a100 := nodes("n", 1, cpuNode("8").Label("gpu", "a100"))
	plain := nodes("n", 1, cpuNode("8"))
	on := func(op corev1.NodeSelectorOperator, values ...string) *st.ConsumerWrapper {
		return consumer("web", 1, "1").Requirement(feature("gpu", op, values...))
	}
	tests := map[string]struct {
		clusters    []cluster
		intent      *fleetfitv1alpha1.HPAIntent
		decided     []string
		want        []string
		wantReasons map[string]string
	}{
		"In: the cluster that reports the key is chosen, the other is unknown": {
			clusters: []cluster{reporting("old", a100), reportingKeys(t, "new", []string{"gpu"}, a100)},
			intent:   newIntent(on(corev1.NodeSelectorOpIn, "a100")),
			want:     []string{"new"},
			wantReasons: map[string]string{
				"old": "consumer app/web: cluster old does not report label gpu yet",
			},
		},
		"NotIn: a node that has the value fails where reported, and is unknown where not": {
			clusters: []cluster{
				reporting("old", a100),
				reportingKeys(t, "new", []string{"gpu"}, a100),
				reportingKeys(t, "new-plain", []string{"gpu"}, plain),
			},
			intent: newIntent(on(corev1.NodeSelectorOpNotIn, "a100")),
			want:   []string{"new-plain"},
			wantReasons: map[string]string{
				"old": "consumer app/web: cluster old does not report label gpu yet",
				"new": "consumer app/web: no schedulable node with gpu NotIn [a100]",
			},
		},
		"DoesNotExist: a cluster without the label is unknown until it reports the key": {
			clusters: []cluster{reporting("old", plain), reportingKeys(t, "new", []string{"gpu"}, plain)},
			intent:   newIntent(on(corev1.NodeSelectorOpDoesNotExist)),
			want:     []string{"new"},
			wantReasons: map[string]string{
				"old": "consumer app/web: cluster old does not report label gpu yet",
			},
		},
		"Gt and Lt are unknown too": {
			clusters: []cluster{reporting("old", nodes("n", 1, cpuNode("8").Label("gpu", "4")))},
			intent: newIntent(consumer("web", 1, "1").Requirement(feature("gpu", corev1.NodeSelectorOpGt, "2"),
				st.MakeFeature("few", "gpu").Operator(corev1.NodeSelectorOpLt).Values("8").Obj())),
			wantReasons: map[string]string{
				"old": "consumer app/web: cluster old does not report label gpu yet",
			},
		},
		"a legacy inventory reports the default prefixes": {
			clusters: []cluster{
				reporting("legacy-gpu", a100).legacy(),
				reporting("legacy-product", nodes("n", 1, gpuNode("A100"))).legacy(),
			},
			intent: newIntent(on(corev1.NodeSelectorOpExists), consumer("ml", 1, "1").Requirement(feature(gpuProduct, corev1.NodeSelectorOpIn, "A100"))),
			wantReasons: map[string]string{
				"legacy-gpu":     "consumer app/web: cluster legacy-gpu does not report label gpu yet" + upgrade,
				"legacy-product": "consumer app/web: cluster legacy-product does not report label gpu yet" + upgrade,
			},
		},
		"a legacy inventory answers for a key under the default prefixes": {
			clusters: []cluster{reporting("legacy", nodes("n", 1, gpuNode("A100"))).legacy()},
			intent:   newIntent(consumer("ml", 1, "1").Requirement(feature(gpuProduct, corev1.NodeSelectorOpIn, "A100"))),
			want:     []string{"legacy"},
		},
		"a decided cluster is kept while the key is unknown there": {
			clusters: []cluster{reporting("old", plain), reporting("other", plain)},
			intent:   intent(on(corev1.NodeSelectorOpIn, "a100")),
			decided:  []string{"old"},
			want:     []string{"old"},
			wantReasons: map[string]string{
				"other": "consumer app/web: cluster other does not report label gpu yet",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.clusters)
			req := request(snap, []*fleetfitv1alpha1.HPAIntent{tc.intent}, tc.decided...)
			rec := &recorder{snap: snap, reasons: map[string]string{}}
			got, status := newPlugin(t).Filter(t.Context(), framework.NewCycleState(), snap, req, framework.NewFullBitset(snap.NumClusters()), rec)
			if !status.IsSuccess() {
				t.Fatalf("Filter: %v", status.AsError())
			}
			if diff := cmp.Diff(tc.want, names(snap, got)); diff != "" {
				t.Errorf("feasible clusters (-want,+got):\n%s", diff)
			}
			if tc.wantReasons == nil {
				tc.wantReasons = map[string]string{}
			}
			if diff := cmp.Diff(tc.wantReasons, rec.reasons); diff != "" {
				t.Errorf("rejection reasons (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestScoreUnreportedLabels: an optional requirement on a label the cluster does not report
// does not score there, even where a node has the label.
func TestScoreUnreportedLabels(t *testing.T) {
	a100 := nodes("n", 1, cpuNode("8").Label("gpu", "a100"))
	snap := snapshot([]cluster{reporting("old", a100), reportingKeys(t, "new", []string{"gpu"}, a100)})
	in := intent(consumer("web", 1, "1").Requirement(st.MakeFeature("gpu", "gpu").Values("a100").Optional(1).Obj()))
	scores := make([]int64, snap.NumClusters())
	status := newPlugin(t).Score(t.Context(), framework.NewCycleState(), snap, request(snap, []*fleetfitv1alpha1.HPAIntent{in}),
		framework.NewFullBitset(snap.NumClusters()), scores)
	if !status.IsSuccess() {
		t.Fatalf("Score: %v", status.AsError())
	}
	got := map[string]int64{}
	for i, s := range scores {
		got[snap.Cluster(i).Name()] = s
	}
	if diff := cmp.Diff(map[string]int64{"old": 0, "new": 100}, got); diff != "" {
		t.Errorf("scores (-want,+got):\n%s", diff)
	}
}
