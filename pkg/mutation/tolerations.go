package mutation

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// addTolerations appends to an unstructured pod spec the tolerations it does
// not already have, in the order given.
func addTolerations(spec map[string]any, at string, tolerations []corev1.Toleration) error {
	if len(tolerations) == 0 {
		return nil
	}
	list, err := sliceAt(spec, at, "tolerations")
	if err != nil {
		return err
	}
	have := make([]corev1.Toleration, 0, len(list)+len(tolerations))
	for i, raw := range list {
		m, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s.tolerations[%d] is %s, not an object", at, i, describe(raw))
		}
		var t corev1.Toleration
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &t); err != nil {
			return fmt.Errorf("%s.tolerations[%d]: %w", at, i, err)
		}
		have = append(have, t)
	}
	added := false
	for _, t := range tolerations {
		if slices.ContainsFunc(have, func(h corev1.Toleration) bool { return sameToleration(h, t) }) {
			continue
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&t)
		if err != nil {
			return fmt.Errorf("toleration %s: %w", t.Key, err)
		}
		list = append(list, u)
		have = append(have, t)
		added = true
	}
	if !added {
		return nil
	}
	spec["tolerations"] = list
	return nil
}

// sameToleration reports whether two tolerations are the same as written,
// taking an empty operator as Equal, its default. A toleration that merely
// covers another, such as one with operator Exists and no key, does not count:
// the pod gets the toleration it needs spelled out.
func sameToleration(a, b corev1.Toleration) bool {
	op := func(o corev1.TolerationOperator) corev1.TolerationOperator {
		if o == "" {
			return corev1.TolerationOpEqual
		}
		return o
	}
	return a.Key == b.Key && op(a.Operator) == op(b.Operator) && a.Value == b.Value && a.Effect == b.Effect &&
		ptrEqual(a.TolerationSeconds, b.TolerationSeconds)
}

func ptrEqual(a, b *int64) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}
