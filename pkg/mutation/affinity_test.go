package mutation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func required(terms ...corev1.NodeSelectorTerm) *corev1.NodeSelector {
	return &corev1.NodeSelector{NodeSelectorTerms: terms}
}

func term(exprs ...corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: exprs}
}

func TestMutateAffinity(t *testing.T) {
	hostname := corev1.NodeSelectorRequirement{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-1"}}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: term(zoneA)}}
	podAntiAffinity := &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		TopologyKey: "kubernetes.io/hostname",
	}}}
	features := []corev1.NodeSelectorRequirement{avx512, sriov}
	zoneBA := corev1.NodeSelectorRequirement{Key: zoneA.Key, Operator: zoneA.Operator, Values: []string{"b", "a"}}

	cases := map[string]struct {
		affinity     *corev1.Affinity
		nodeSelector map[string]string
		features     []corev1.NodeSelectorRequirement
		want         *corev1.Affinity
	}{
		"no affinity gets one term": {
			features: features,
			want:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(avx512, sriov))}},
		},
		"one term keeps what the user wrote": {
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(zoneA))}},
			features: features,
			want:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(zoneA, avx512, sriov))}},
		},
		"every one of two terms gets the features": {
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(
				term(zoneA),
				corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{hostname}},
			)}},
			features: features,
			want: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(
				term(zoneA, avx512, sriov),
				corev1.NodeSelectorTerm{MatchExpressions: features, MatchFields: []corev1.NodeSelectorRequirement{hostname}},
			)}},
		},
		"an existing identical requirement is not duplicated": {
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(sriov, zoneA))}},
			features: []corev1.NodeSelectorRequirement{zoneBA, avx512, sriov},
			want:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(sriov, zoneA, avx512))}},
		},
		"a feature listed twice is added once": {
			features: []corev1.NodeSelectorRequirement{avx512, avx512},
			want:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(avx512))}},
		},
		"a requirement on the same key with other values is added": {
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(zoneA))}},
			features: []corev1.NodeSelectorRequirement{{Key: zoneA.Key, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
			want: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(
				zoneA, corev1.NodeSelectorRequirement{Key: zoneA.Key, Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}))}},
		},
		"preferred-only affinity stays, a required term is added": {
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
			features: features,
			want: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution:  required(term(avx512, sriov)),
				PreferredDuringSchedulingIgnoredDuringExecution: preferred,
			}},
		},
		"pod anti-affinity and nodeSelector stay": {
			affinity:     &corev1.Affinity{PodAntiAffinity: podAntiAffinity},
			nodeSelector: map[string]string{"disktype": "ssd"},
			features:     []corev1.NodeSelectorRequirement{avx512},
			want: &corev1.Affinity{
				NodeAffinity:    &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(avx512))},
				PodAntiAffinity: podAntiAffinity,
			},
		},
		// An empty term matches no node, and so would the term with the
		// features added: filling it would let the pod onto nodes the user
		// never allowed.
		"an empty term stays empty": {
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(zoneA), term())}},
			features: []corev1.NodeSelectorRequirement{avx512},
			want:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(zoneA, avx512), term())}},
		},
		"an empty list of terms gets one": {
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required()}},
			features: []corev1.NodeSelectorRequirement{avx512},
			want:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(avx512))}},
		},
		"no features leave the affinity alone": {
			affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
			want:     &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
		},
		"no features and no affinity create none": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := func(a *corev1.Affinity) *corev1.PodSpec {
				return &corev1.PodSpec{Containers: []corev1.Container{ctr("app", nil, nil)}, Affinity: a, NodeSelector: tc.nodeSelector}
			}
			obj := object("apps/v1", "Deployment", spec(tc.affinity))
			if err := mutateTwice(t, obj, Mutation{Features: tc.features}); err != nil {
				t.Fatalf("Mutate failed: %v", err)
			}
			if diff := cmp.Diff(object("apps/v1", "Deployment", spec(tc.want)).Object, obj.Object); diff != "" {
				t.Errorf("Unexpected object (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestMutateNullAffinity checks fields a hand-written manifest leaves null,
// such as `affinity:` with nothing under it.
func TestMutateNullAffinity(t *testing.T) {
	for name, null := range map[string][]string{
		"affinity":          {"affinity"},
		"nodeAffinity":      {"affinity", "nodeAffinity"},
		"required":          {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution"},
		"nodeSelectorTerms": {"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"},
		"tolerations":       {"tolerations"},
	} {
		t.Run(name, func(t *testing.T) {
			obj := pod(&corev1.PodSpec{Containers: []corev1.Container{ctr("app", nil, nil)}})
			if err := unstructured.SetNestedField(obj.Object, nil, append([]string{"spec"}, null...)...); err != nil {
				t.Fatal(err)
			}
			m := Mutation{Features: []corev1.NodeSelectorRequirement{avx512}, Tolerations: []corev1.Toleration{gpuToleration}}
			if err := mutateTwice(t, obj, m); err != nil {
				t.Fatalf("Mutate failed: %v", err)
			}
			want := pod(&corev1.PodSpec{
				Containers:  []corev1.Container{ctr("app", nil, nil)},
				Affinity:    &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required(term(avx512))}},
				Tolerations: []corev1.Toleration{gpuToleration},
			})
			if diff := cmp.Diff(want.Object, obj.Object); diff != "" {
				t.Errorf("Unexpected object (-want,+got):\n%s", diff)
			}
		})
	}
}
