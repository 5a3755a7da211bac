package simulate

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of names, label keys and label values that the API server enforces.
const (
	maxNameLength       = 253
	maxLabelKeyLength   = 253 + 1 + 63 // a DNS subdomain prefix, a slash, a name
	maxLabelValueLength = 63
)

// oversizedMetadata refuses names, label keys and label values far longer than the API server
// allows before they are matched against its patterns: matching a label value of 50 MB takes
// seconds, and the message is the API server's all the same.
func oversizedMetadata(u *unstructured.Unstructured) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if name := u.GetName(); len(name) > maxNameLength {
		errs = append(errs, field.TooLong(meta.Child("name"), name, maxNameLength))
	}
	labels := u.GetLabels()
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if len(k) > maxLabelKeyLength {
			errs = append(errs, field.Invalid(meta.Child("labels"), k, fmt.Sprintf("a label key must be no more than %d bytes", maxLabelKeyLength)))
		}
		if v := labels[k]; len(v) > maxLabelValueLength {
			errs = append(errs, field.Invalid(meta.Child("labels"), v, fmt.Sprintf("must be no more than %d bytes", maxLabelValueLength)))
		}
	}
	return errs
}

// failingField returns the path of the innermost field of obj whose value alone cannot be
// converted to its Go type (a quantity that is no quantity, a string where a boolean belongs),
// or nil. The converter's own errors do not say which field, and a message must.
func failingField(gvk schema.GroupVersionKind, obj map[string]any) *field.Path {
	converts := func(partial map[string]any) bool {
		out, err := Scheme.New(gvk)
		if err != nil || partial == nil {
			return true
		}
		partial["apiVersion"], partial["kind"] = obj["apiVersion"], obj["kind"]
		return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(partial, out, false) == nil
	}
	// wrap builds an object holding only v, at the path of keys and indexes given.
	var wrap func(steps []any, v any) any
	wrap = func(steps []any, v any) any {
		if len(steps) == 0 {
			return v
		}
		if k, ok := steps[0].(string); ok {
			return map[string]any{k: wrap(steps[1:], v)}
		}
		return []any{wrap(steps[1:], v)}
	}
	var search func(p *field.Path, steps []any, v any) *field.Path
	search = func(p *field.Path, steps []any, v any) *field.Path {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if len(steps) == 0 && (k == "apiVersion" || k == "kind") {
					continue
				}
				child := append(slices.Clone(steps), k)
				if root, _ := wrap(child, x[k]).(map[string]any); !converts(root) {
					if inner := search(p.Child(k), child, x[k]); inner != nil {
						return inner
					}
					return p.Child(k)
				}
			}
		case []any:
			for i, e := range x {
				child := append(slices.Clone(steps), i)
				if root, _ := wrap(steps, []any{e}).(map[string]any); !converts(root) {
					if inner := search(p.Index(i), child, e); inner != nil {
						return inner
					}
					return p.Index(i)
				}
			}
		}
		return nil
	}
	return search(nil, nil, obj)
}

// numbersKept checks that every number of in reads the same in obj, converted from it: a
// number too large for its field (an int32 such as replicas) must be refused, not wrapped
// into a small one. The hub's CRD schemas say so for their kinds; this holds for every kind.
func numbersKept(in map[string]any, obj runtime.Object) field.ErrorList {
	out, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	var errs field.ErrorList
	compareNumbers(nil, in, out, &errs)
	return errs
}

// outOfRange is what a number that its field cannot hold gets told: the fields a conversion
// can change are 32-bit integers.
const outOfRange = "out of range: this field is a 32-bit integer, from -2147483648 to 2147483647"

func compareNumbers(p *field.Path, in, out any, errs *field.ErrorList) {
	switch v := in.(type) {
	case map[string]any:
		o, _ := out.(map[string]any)
		for k, x := range v {
			compareNumbers(p.Child(k), x, o[k], errs)
		}
	case []any:
		o, _ := out.([]any)
		for i, x := range v {
			var y any
			if i < len(o) {
				y = o[i]
			}
			compareNumbers(p.Index(i), x, y, errs)
		}
	case int64:
		switch o := out.(type) {
		case int64:
			if o != v {
				*errs = append(*errs, field.Invalid(p, v, outOfRange))
			}
		case nil:
			if v != 0 {
				*errs = append(*errs, field.Invalid(p, v, outOfRange))
			}
		}
	}
}

// fieldErrors prints at most maxErrors problems, each with its field, without values so long
// that they would bury the message.
func fieldErrors(errs field.ErrorList) string {
	var msgs []string
	for i, e := range errs {
		if i == maxErrors {
			msgs = append(msgs, fmt.Sprintf("and %d more", len(errs)-maxErrors))
			break
		}
		e := *e
		switch v := e.BadValue.(type) {
		case string:
			if len(v) > 64 {
				e.BadValue = fmt.Sprintf("%.40s... (%d bytes)", v, len(v))
			}
		case int64, int32, int, float64, bool, nil:
		default:
			e.BadValue = field.OmitValueType{}
		}
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "; ")
}
