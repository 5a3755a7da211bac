package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

func req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// TestSelectorOperators checks every operator on a present, missing and
// (for Gt/Lt) non-numeric label, and checks each answer against Kubernetes'
// own node affinity matcher.
func TestSelectorOperators(t *testing.T) {
	labels := map[string]string{"gpu": "A100", "cores": "16", "name": "x"}
	cases := map[string]struct {
		req  corev1.NodeSelectorRequirement
		want bool
	}{
		"In matches a listed value":        {req: req("gpu", corev1.NodeSelectorOpIn, "H100", "A100"), want: true},
		"In fails an unlisted value":       {req: req("gpu", corev1.NodeSelectorOpIn, "H100"), want: false},
		"In fails a missing label":         {req: req("missing", corev1.NodeSelectorOpIn, "A100"), want: false},
		"NotIn fails a listed value":       {req: req("gpu", corev1.NodeSelectorOpNotIn, "A100"), want: false},
		"NotIn passes an unlisted value":   {req: req("gpu", corev1.NodeSelectorOpNotIn, "H100"), want: true},
		"NotIn passes a missing label":     {req: req("missing", corev1.NodeSelectorOpNotIn, "A100"), want: true},
		"Exists passes a present label":    {req: req("gpu", corev1.NodeSelectorOpExists), want: true},
		"Exists fails a missing label":     {req: req("missing", corev1.NodeSelectorOpExists), want: false},
		"DoesNotExist fails a present one": {req: req("gpu", corev1.NodeSelectorOpDoesNotExist), want: false},
		"DoesNotExist passes a missing":    {req: req("missing", corev1.NodeSelectorOpDoesNotExist), want: true},
		"Gt passes a larger number":        {req: req("cores", corev1.NodeSelectorOpGt, "8"), want: true},
		"Gt fails an equal number":         {req: req("cores", corev1.NodeSelectorOpGt, "16"), want: false},
		"Gt fails a missing label":         {req: req("missing", corev1.NodeSelectorOpGt, "8"), want: false},
		"Gt fails a non-numeric label":     {req: req("name", corev1.NodeSelectorOpGt, "8"), want: false},
		"Lt passes a smaller number":       {req: req("cores", corev1.NodeSelectorOpLt, "32"), want: true},
		"Lt fails an equal number":         {req: req("cores", corev1.NodeSelectorOpLt, "16"), want: false},
		"Lt fails a missing label":         {req: req("missing", corev1.NodeSelectorOpLt, "32"), want: false},
		"Lt fails a non-numeric label":     {req: req("name", corev1.NodeSelectorOpLt, "32"), want: false},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := NewSelector([]corev1.NodeSelectorRequirement{tc.req}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := sel.matchesLabels(labels); got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
			oracle, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{tc.req}}}})
			if err != nil {
				t.Fatal(err)
			}
			if k8s := oracle.Match(node); k8s != tc.want {
				t.Errorf("Kubernetes node affinity says %v, the test wants %v", k8s, tc.want)
			}
		})
	}
}

func TestSelectorRejects(t *testing.T) {
	cases := map[string]corev1.NodeSelectorRequirement{
		"In without values":       req("k", corev1.NodeSelectorOpIn),
		"NotIn without values":    req("k", corev1.NodeSelectorOpNotIn),
		"Exists with values":      req("k", corev1.NodeSelectorOpExists, "v"),
		"DoesNotExist with value": req("k", corev1.NodeSelectorOpDoesNotExist, "v"),
		"Gt with two values":      req("k", corev1.NodeSelectorOpGt, "1", "2"),
		"Lt with a non-integer":   req("k", corev1.NodeSelectorOpLt, "1.5"),
		"unknown operator":        req("k", "Near", "v"),
		"invalid key":             req("-bad-", corev1.NodeSelectorOpExists),
		"invalid value":           req("k", corev1.NodeSelectorOpIn, "not a label value"),
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := NewSelector([]corev1.NodeSelectorRequirement{r}, nil); err == nil {
				t.Errorf("NewSelector accepted %+v", r)
			}
			_, k8sErr := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchExpressions: []corev1.NodeSelectorRequirement{r}}}})
			if k8sErr == nil {
				t.Errorf("Kubernetes accepts %+v, so should we", r)
			}
		})
	}
}

func TestSelectorTaints(t *testing.T) {
	taints := []corev1.Taint{
		{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule},
		{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
		{Key: "evict", Effect: corev1.TaintEffectNoExecute},
	}
	cases := map[string]struct {
		tolerations []corev1.Toleration
		want        string // key of the first untolerated taint, "" when all are
	}{
		"nothing tolerated; PreferNoSchedule never excludes": {want: "dedicated"},
		"Equal tolerates the exact value": {
			tolerations: []corev1.Toleration{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
			want:        "evict",
		},
		"a wrong value does not tolerate": {
			tolerations: []corev1.Toleration{{Key: "dedicated", Value: "cpu"}, {Key: "evict", Operator: corev1.TolerationOpExists}},
			want:        "dedicated",
		},
		"Exists without a key tolerates everything": {
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		},
		"an effect limits the toleration": {
			tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			want:        "evict",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := NewSelector(nil, tc.tolerations)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := sel.untolerated(taints)
			if diff := cmp.Diff(tc.want, got.Key); diff != "" {
				t.Errorf("first untolerated taint (-want,+got):\n%s", diff)
			}
		})
	}
}
