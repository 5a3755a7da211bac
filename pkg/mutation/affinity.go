package mutation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// requiredTermsPath is where a pod spec keeps its required node selector terms.
var requiredTermsPath = []string{"affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"}

// addFeatures ANDs the features into the required node affinity of an
// unstructured pod spec. Terms are ORed and the requirements of a term ANDed,
// so every term gets each feature it does not already have; a pod without
// terms gets one. An empty term matches no node, and so does any term the
// features are added to, so empty terms stay as the user wrote them.
// Preferred affinity, nodeSelector and matchFields are left alone.
func addFeatures(spec map[string]any, at string, features []corev1.NodeSelectorRequirement) error {
	if len(features) == 0 {
		return nil
	}
	terms, err := sliceAt(spec, at, requiredTermsPath...)
	if err != nil {
		return err
	}
	created := len(terms) == 0
	if created {
		terms = []any{map[string]any{}}
	}
	for i, raw := range terms {
		termAt := fmt.Sprintf("%s[%d]", fieldName(at, requiredTermsPath...), i)
		term, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is %s, not an object", termAt, describe(raw))
		}
		if err := addToTerm(term, termAt, features, created); err != nil {
			return err
		}
	}
	setAt(spec, terms, requiredTermsPath...)
	return nil
}

// addToTerm adds the features a term, the one at at, lacks to its
// matchExpressions. An empty term is filled only when addFeatures created it.
func addToTerm(term map[string]any, at string, features []corev1.NodeSelectorRequirement, created bool) error {
	exprs, err := sliceAt(term, at, "matchExpressions")
	if err != nil {
		return err
	}
	fields, err := sliceAt(term, at, "matchFields")
	if err != nil {
		return err
	}
	if len(exprs) == 0 && len(fields) == 0 && !created {
		return nil
	}
	have := make([]corev1.NodeSelectorRequirement, 0, len(exprs)+len(features))
	for i, raw := range exprs {
		e, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s.matchExpressions[%d] is %s, not an object", at, i, describe(raw))
		}
		var r corev1.NodeSelectorRequirement
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(e, &r); err != nil {
			return fmt.Errorf("%s.matchExpressions[%d]: %w", at, i, err)
		}
		have = append(have, r)
	}
	added := false
	for _, f := range features {
		if slices.ContainsFunc(have, func(h corev1.NodeSelectorRequirement) bool { return sameRequirement(h, f) }) {
			continue
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&f)
		if err != nil {
			return fmt.Errorf("feature %s: %w", f.Key, err)
		}
		exprs = append(exprs, u)
		have = append(have, f)
		added = true
	}
	if added {
		term["matchExpressions"] = exprs
	}
	return nil
}

// sameRequirement reports whether two requirements select the same nodes as
// written: same key and operator, and the same values in any order.
func sameRequirement(a, b corev1.NodeSelectorRequirement) bool {
	if a.Key != b.Key || a.Operator != b.Operator || len(a.Values) != len(b.Values) {
		return false
	}
	av, bv := slices.Clone(a.Values), slices.Clone(b.Values)
	slices.Sort(av)
	slices.Sort(bv)
	return slices.Equal(av, bv)
}
