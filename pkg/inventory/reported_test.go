package inventory

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// TestUnreportedLabelsAreUnknown: a requirement on a label the cluster does not report
// matches no node, whatever its operator, and says why; on a reported label the operators
// mean what they mean in node affinity, the label's absence included.
func TestUnreportedLabelsAreUnknown(t *testing.T) {
	// One node labelled gpu=a100 and cores=16, one with neither.
	labelled := makeNode("labelled").Resources("cpu", "8", "pods", "110").Label("gpu", "a100").Label("cores", "16").Obj()
	plain := makeNode("plain").Resources("cpu", "8", "pods", "110").Obj()
	both := []*corev1.Node{labelled, plain}
	onlyLabelled := []*corev1.Node{labelled}

	withKeys := DefaultConfig()
	withKeys.FeatureLabelKeys = []string{"cores", "gpu"}
	withPrefix := Config{FeatureLabelPrefixes: []string{"g"}, MaxFreeVectorsPerShape: 4}
	unreported := answers{Reason: "the cluster does not report label gpu yet", Exact: true}

	cases := map[string]struct {
		cfg   Config
		nodes []*corev1.Node
		// legacy drops reportedLabels from the report, as an older agent writes it.
		legacy   bool
		features []corev1.NodeSelectorRequirement
		want     answers
	}{
		"In on a reported key fits the labelled node": {
			cfg: withKeys, nodes: both, features: features(req("gpu", corev1.NodeSelectorOpIn, "a100")),
			want: answers{Fits: true, Replicas: 1, Exact: true},
		},
		"In on an unreported key is unknown": {
			cfg: DefaultConfig(), nodes: both, features: features(req("gpu", corev1.NodeSelectorOpIn, "a100")),
			want: unreported,
		},
		"NotIn on a reported key fits only the node without the value": {
			cfg: withKeys, nodes: onlyLabelled, features: features(req("gpu", corev1.NodeSelectorOpNotIn, "a100")),
			want: answers{Reason: "no schedulable node with gpu NotIn [a100]", Exact: true},
		},
		"NotIn on a reported key fits a node without the label": {
			cfg: withKeys, nodes: both, features: features(req("gpu", corev1.NodeSelectorOpNotIn, "a100")),
			want: answers{Fits: true, Replicas: 1, Exact: true},
		},
		"NotIn on an unreported key is unknown, even where a node has the value": {
			cfg: DefaultConfig(), nodes: onlyLabelled, features: features(req("gpu", corev1.NodeSelectorOpNotIn, "a100")),
			want: unreported,
		},
		"Exists on a reported key": {
			cfg: withKeys, nodes: both, features: features(req("gpu", corev1.NodeSelectorOpExists)),
			want: answers{Fits: true, Replicas: 1, Exact: true},
		},
		"Exists on an unreported key is unknown": {
			cfg: DefaultConfig(), nodes: both, features: features(req("gpu", corev1.NodeSelectorOpExists)),
			want: unreported,
		},
		"DoesNotExist on a reported key fails where every node has it": {
			cfg: withKeys, nodes: onlyLabelled, features: features(req("gpu", corev1.NodeSelectorOpDoesNotExist)),
			want: answers{Reason: "no schedulable node with gpu DoesNotExist", Exact: true},
		},
		"DoesNotExist on an unreported key is unknown, even where no node has it": {
			cfg: DefaultConfig(), nodes: []*corev1.Node{plain}, features: features(req("gpu", corev1.NodeSelectorOpDoesNotExist)),
			want: unreported,
		},
		"Gt on a reported key": {
			cfg: withKeys, nodes: both, features: features(req("cores", corev1.NodeSelectorOpGt, "8")),
			want: answers{Fits: true, Replicas: 1, Exact: true},
		},
		"Gt on an unreported key is unknown": {
			cfg: DefaultConfig(), nodes: both, features: features(req("cores", corev1.NodeSelectorOpGt, "8")),
			want: answers{Reason: "the cluster does not report label cores yet", Exact: true},
		},
		"Lt on a reported key": {
			cfg: withKeys, nodes: both, features: features(req("cores", corev1.NodeSelectorOpLt, "8")),
			want: answers{Reason: "no schedulable node with cores Lt 8", Exact: true},
		},
		"Lt on an unreported key is unknown": {
			cfg: DefaultConfig(), nodes: both, features: features(req("cores", corev1.NodeSelectorOpLt, "32")),
			want: answers{Reason: "the cluster does not report label cores yet", Exact: true},
		},
		"a key a reported prefix covers is known": {
			cfg: withPrefix, nodes: both, features: features(req("gpu", corev1.NodeSelectorOpDoesNotExist)),
			want: answers{Fits: true, Replicas: 1, Exact: true},
		},
		"the first unreported key is named": {
			cfg: withPrefix, nodes: both,
			features: features(req("gpu", corev1.NodeSelectorOpExists), req("cores", corev1.NodeSelectorOpExists), req("zone", corev1.NodeSelectorOpExists)),
			want:     answers{Reason: "the cluster does not report label cores yet", Exact: true},
		},
		"a legacy inventory reports the default prefixes: a key under them is known": {
			cfg: DefaultConfig(), legacy: true, nodes: both,
			features: features(req("nvidia.com/gpu.product", corev1.NodeSelectorOpDoesNotExist)),
			want:     answers{Fits: true, Replicas: 2, Exact: true},
		},
		"a legacy inventory reports the default prefixes only: another key is unknown": {
			cfg: withKeys, legacy: true, nodes: both, features: features(req("gpu", corev1.NodeSelectorOpIn, "a100")),
			want: unreported,
		},
		"no feature requirement needs nothing reported": {
			cfg: Config{MaxFreeVectorsPerShape: 4}, nodes: both,
			want: answers{Fits: true, Replicas: 2, Exact: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := summarize(t, tc.cfg, tc.nodes, nil)
			if tc.legacy {
				st.ReportedLabels = nil
			}
			r := mustRequest(t, rl("cpu", "8"), tc.features)
			got := ask(t, st, r)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answers (-want,+got):\n%s", diff)
			}
			// Every fit query agrees with FitsOnOneNode.
			v := NewView(&st)
			if has := v.HasNode(r.Selector()); has != tc.want.Fits {
				t.Errorf("HasNode = %v, want %v", has, tc.want.Fits)
			}
			if placed := v.Allocate().Place(r, 2); (placed > 0) != tc.want.Fits {
				t.Errorf("Place placed %d, want some: %v", placed, tc.want.Fits)
			}
			if _, found := v.FreeOnBestNode(corev1.ResourceCPU, r.Selector()); found != tc.want.Fits {
				t.Errorf("FreeOnBestNode found a node = %v, want %v", found, tc.want.Fits)
			}
		})
	}
}

func features(reqs ...corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement { return reqs }

// TestSetFeatureLabelKeys: keys set on a running inventory re-read the nodes given, are
// reported from then on, and say so; invalid keys change nothing.
func TestSetFeatureLabelKeys(t *testing.T) {
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	node := makeNode("n").Resources("cpu", "4").Label("gpu", "a100").Label("rack", "r1").Obj()
	c.UpsertNode(node)
	labelsOf := func() (map[string]string, *v1alpha1.ReportedLabels) {
		st := c.Summarize()
		if len(st.NodeShapes) != 1 {
			t.Fatalf("want one shape, got %d", len(st.NodeShapes))
		}
		return st.NodeShapes[0].Labels, st.ReportedLabels
	}
	if got, rep := labelsOf(); got != nil || len(rep.Keys) != 0 {
		t.Fatalf("before any key: labels %v, reported keys %v; want none", got, rep.Keys)
	}

	changed, _, err := c.SetFeatureLabelKeys([]string{"gpu", "gpu"}, []*corev1.Node{node})
	if err != nil || !changed {
		t.Fatalf("SetFeatureLabelKeys = %v, %v; want a change", changed, err)
	}
	got, rep := labelsOf()
	if diff := cmp.Diff(map[string]string{"gpu": "a100"}, got); diff != "" {
		t.Errorf("labels (-want,+got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"gpu"}, rep.Keys); diff != "" {
		t.Errorf("reported keys (-want,+got):\n%s", diff)
	}
	if changed, _, err := c.SetFeatureLabelKeys([]string{"gpu"}, []*corev1.Node{node}); err != nil || changed {
		t.Errorf("setting the same keys again = %v, %v; want no change", changed, err)
	}
	if _, _, err := c.SetFeatureLabelKeys([]string{"not a key!"}, []*corev1.Node{node}); err == nil {
		t.Error("an invalid key was accepted")
	}
	if _, rep := labelsOf(); !cmp.Equal([]string{"gpu"}, rep.Keys) {
		t.Errorf("an invalid key changed the reported keys to %v", rep.Keys)
	}
	if changed, _, err := c.SetFeatureLabelKeys(nil, []*corev1.Node{node}); err != nil || !changed {
		t.Fatalf("clearing the keys = %v, %v; want a change", changed, err)
	}
	if got, rep := labelsOf(); got != nil || len(rep.Keys) != 0 {
		t.Errorf("after clearing: labels %v, reported keys %v; want none", got, rep.Keys)
	}
}

// TestPerNodeLabelKeysAreNotReported: a key the hub asks for whose label names its node
// (kubernetes.io/hostname) would make every node a shape of its own; it is left out while its
// nodes have more than MaxLabelKeyValues values, so the report keeps one shape, and taken back
// once they have fewer.
func TestPerNodeLabelKeysAreNotReported(t *testing.T) {
	c, err := NewCluster(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*corev1.Node
	for i := range MaxLabelKeyValues + 1 {
		name := fmt.Sprintf("n%d", i)
		n := makeNode(name).Resources("cpu", "4").Label("gpu", "a100").Label("kubernetes.io/hostname", name).Obj()
		nodes = append(nodes, n)
		c.UpsertNode(n)
	}
	changed, omitted, err := c.SetFeatureLabelKeys([]string{"kubernetes.io/hostname", "gpu"}, nodes)
	if err != nil || !changed {
		t.Fatalf("SetFeatureLabelKeys = %v, %v; want a change", changed, err)
	}
	if diff := cmp.Diff([]string{"kubernetes.io/hostname"}, omitted); diff != "" {
		t.Errorf("omitted (-want,+got):\n%s", diff)
	}
	st := c.Summarize()
	if len(st.NodeShapes) != 1 {
		t.Errorf("%d shapes, want 1: the per-node label must not split the nodes", len(st.NodeShapes))
	}
	if diff := cmp.Diff([]string{"gpu"}, st.ReportedLabels.Keys); diff != "" {
		t.Errorf("reported keys (-want,+got):\n%s", diff)
	}

	// One node fewer: the key has MaxLabelKeyValues values and is reported.
	c.DeleteNode(nodes[0].Name)
	changed, omitted, err = c.SetFeatureLabelKeys([]string{"kubernetes.io/hostname", "gpu"}, nodes[1:])
	if err != nil || !changed || len(omitted) != 0 {
		t.Fatalf("SetFeatureLabelKeys = %v, %v, %v; want a change and nothing omitted", changed, omitted, err)
	}
	st = c.Summarize()
	if diff := cmp.Diff([]string{"gpu", "kubernetes.io/hostname"}, st.ReportedLabels.Keys); diff != "" {
		t.Errorf("reported keys (-want,+got):\n%s", diff)
	}
	if len(st.NodeShapes) != MaxLabelKeyValues {
		t.Errorf("%d shapes, want %d: one per hostname", len(st.NodeShapes), MaxLabelKeyValues)
	}
}
