package simulate

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1/validation"
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
// that value, and the converter's error for it; or a nil path. The converter's own errors do
// not say which field, and a message must.
func failingField(gvk schema.GroupVersionKind, obj map[string]any) (*field.Path, any, error) {
	convert := func(partial map[string]any) error {
		out, err := Scheme.New(gvk)
		if err != nil || partial == nil {
			return nil
		}
		partial["apiVersion"], partial["kind"] = obj["apiVersion"], obj["kind"]
		return runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(partial, out, false)
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
	type found struct {
		path  *field.Path
		value any
		err   error
	}
	// check returns what is wrong with v at steps (p), the innermost field first; a mapping
	// or sequence where the field takes something else is wrong as a whole.
	var search func(p *field.Path, steps []any, v any) *found
	check := func(p *field.Path, steps []any, v any) *found {
		root, _ := wrap(steps, v).(map[string]any)
		err := convert(root)
		if err == nil {
			return nil
		}
		var empty any
		switch v.(type) {
		case map[string]any:
			empty = map[string]any{}
		case []any:
			empty = []any{}
		default:
			return &found{p, v, err}
		}
		root, _ = wrap(steps, empty).(map[string]any)
		if err := convert(root); err != nil {
			return &found{p, v, err}
		}
		if inner := search(p, steps, v); inner != nil {
			return inner
		}
		return &found{p, v, err}
	}
	search = func(p *field.Path, steps []any, v any) *found {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				if len(steps) == 0 && (k == "apiVersion" || k == "kind") {
					continue
				}
				if f := check(p.Child(k), append(slices.Clone(steps), k), x[k]); f != nil {
					return f
				}
			}
		case []any:
			for i, e := range x {
				// An element is tried alone, at index 0 of its sequence.
				if f := check(p.Index(i), append(slices.Clone(steps), 0), e); f != nil {
					return f
				}
			}
		}
		return nil
	}
	if f := search(nil, nil, obj); f != nil {
		return f.path, f.value, f.err
	}
	return nil, nil, nil
}

// conversionTypes pick the type a field takes out of the converter's messages, which name
// Go types: "unrecognized type: string", "cannot convert int64 to string", "cannot restore
// slice from map".
var conversionTypes = regexp.MustCompile(`unrecognized type: (\w+)|cannot convert \w+ to (\w+)|cannot restore (\w+) from`)

// conversionMessage says that value has not the type its field takes, in the words of YAML and
// JSON, or returns the converter's message when it says something else (a malformed quantity).
func conversionMessage(value any, err error) string {
	m := conversionTypes.FindStringSubmatch(err.Error())
	if m == nil {
		return err.Error()
	}
	want := valueType(m[1] + m[2] + m[3])
	if want == "" {
		return err.Error()
	}
	return fmt.Sprintf("%s where %s belongs", describe(value), want)
}

// valueType names a Go kind as a fleet file's author knows it.
func valueType(kind string) string {
	switch {
	case kind == "string":
		return "a string"
	case kind == "bool":
		return "a boolean (true or false)"
	case strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint"):
		return "an integer"
	case strings.HasPrefix(kind, "float"):
		return "a number"
	case kind == "slice":
		return "a sequence"
	case kind == "map" || kind == "struct":
		return "a mapping"
	}
	return ""
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

// amountFields are the fields under which the kinds of a fleet keep resource amounts: a Node's
// capacity and allocatable, a Pod's requests, limits and overhead, a ClusterInventory's totals
// and free vectors, an HPAIntent's requests and limits.
var amountFields = map[string]bool{
	"capacity": true, "allocatable": true, "requests": true, "limits": true, "overhead": true,
	"resources": true, "free": true, "requested": true,
}

// longExponents refuses amounts written with an exponent of four digits or more before they are
// parsed: Kubernetes' quantity parser takes minutes, or never ends, on some of them
// (1e70955161706), and none is an amount a node or a pod could have. Only fields under an
// amount field are looked at, so that a label value such as 1e1000 stays a label value.
func longExponents(obj map[string]any) field.ErrorList {
	var errs field.ErrorList
	var walk func(p *field.Path, v any, inAmounts bool)
	walk = func(p *field.Path, v any, inAmounts bool) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(p.Child(k), v[k], inAmounts || amountFields[k])
			}
		case []any:
			for i := range v {
				walk(p.Index(i), v[i], inAmounts)
			}
		case string:
			if inAmounts && validation.HasLongExponent(v) {
				errs = append(errs, field.Invalid(p, v, "write amounts with an exponent of at most three digits, such as 4e9 or 4G: longer exponents give amounts far beyond what fleetfit can count, or below the smallest, 1n"))
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if k != "metadata" {
			walk(field.NewPath(k), obj[k], amountFields[k])
		}
	}
	return errs
}

// clusterSetSelector checks a ManagedClusterSet's label selector as OCM reads it: a selector
// it cannot parse (an operator other than In, NotIn, Exists and DoesNotExist, or values where
// none belong) selects no cluster at all, which a fleet file would otherwise simulate as a
// set that is empty for no visible reason.
func clusterSetSelector(s *clusterv1beta2.ManagedClusterSet) field.ErrorList {
	sel := s.Spec.ClusterSelector
	if sel.SelectorType != clusterv1beta2.LabelSelector || sel.LabelSelector == nil {
		return nil
	}
	errs := metavalidation.ValidateLabelSelector(sel.LabelSelector, metavalidation.LabelSelectorValidationOptions{},
		field.NewPath("spec", "clusterSelector", "labelSelector"))
	for _, e := range errs {
		// The operator is named in the message, as the string it was written as.
		if op, ok := e.BadValue.(metav1.LabelSelectorOperator); ok {
			e.BadValue = string(op)
		}
	}
	return errs
}
