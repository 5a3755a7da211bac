package simulate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1/validation"
)

// Scheme knows every kind a fleet file may hold.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(clusterv1.Install(Scheme))
	utilruntime.Must(clusterv1alpha1.Install(Scheme))
	utilruntime.Must(clusterv1beta1.Install(Scheme))
	utilruntime.Must(clusterv1beta2.Install(Scheme))
	utilruntime.Must(fleetfitv1alpha1.AddToScheme(Scheme))
}

// fleetKind is a kind a fleet file holds, at the one version the hub serves and stores it.
type fleetKind struct {
	gv         schema.GroupVersion
	namespaced bool
}

// fleetKinds are the kinds a fleet file holds, by kind.
var fleetKinds = map[string]fleetKind{
	"ManagedCluster":           {clusterv1.SchemeGroupVersion, false},
	"ManagedClusterSet":        {clusterv1beta2.SchemeGroupVersion, false},
	"ManagedClusterSetBinding": {clusterv1beta2.SchemeGroupVersion, true},
	"AddOnPlacementScore":      {clusterv1alpha1.SchemeGroupVersion, true},
	"ClusterInventory":         {fleetfitv1alpha1.SchemeGroupVersion, true},
	"Placement":                {clusterv1beta1.SchemeGroupVersion, true},
	"PlacementDecision":        {clusterv1beta1.SchemeGroupVersion, true},
	"HPAIntent":                {fleetfitv1alpha1.SchemeGroupVersion, true},
	"Node":                     {corev1.SchemeGroupVersion, false},
	"Pod":                      {corev1.SchemeGroupVersion, true},
	"Namespace":                {corev1.SchemeGroupVersion, false},
}

// supportedKinds is what an error about an unknown kind lists.
const supportedKinds = "ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding, AddOnPlacementScore, ClusterInventory, " +
	"Placement, PlacementDecision, HPAIntent, Node, Pod (Namespaces are ignored; a List may hold any of them)"

// maxErrors is how many problems of one object a message lists.
const maxErrors = 10

// place is where an object was read: a file, its document (counted from 1; every object of a
// JSON stream is a document of its own) and the item of a List (from 1, 0 for no List).
type place struct {
	source string
	doc    int
	item   int
}

func (p place) String() string {
	s := fmt.Sprintf("%s, document %d", p.source, p.doc)
	if p.item > 0 {
		s += fmt.Sprintf(", item %d", p.item)
	}
	return s
}

// Decode reads a fleet file into f: YAML documents separated by "---", or JSON objects one
// after another, each an object or a List of objects; UTF-8, or UTF-16 with a byte order mark.
// Every object is checked as the hub's API server would check it on create — its kind and
// apiVersion, a mapping key given twice, its CRD's schema and CEL rules with the defaults
// they give, or for Nodes and Pods their names, labels and amounts — and unknown fields and
// numbers out of their field's range are errors, never dropped or wrapped. HPAIntents are also
// checked as admission checks them. source names the input in errors, which say the document
// and the field. An object that appears twice (the same kind, namespace and name, in this
// input or one decoded before into f) is an error naming both places.
func (f *Fleet) Decode(r io.Reader, source string) error {
	text, err := readText(r, source)
	if err != nil {
		return err
	}
	return eachDocument(text, source, func(at place, obj any) error {
		m, ok := obj.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: is %s, not an object: every document is one object with apiVersion and kind, or a List of them", at, describe(obj))
		}
		u := &unstructured.Unstructured{Object: m}
		if !isList(u) {
			return f.addUnstructured(u, at)
		}
		items, _ := m["items"].([]any)
		for i, item := range items {
			at := place{source: at.source, doc: at.doc, item: i + 1}
			m, ok := item.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: is %s, not an object", at, describe(item))
			}
			if err := f.addUnstructured(&unstructured.Unstructured{Object: m}, at); err != nil {
				return err
			}
		}
		return nil
	})
}

// isList reports whether u is a List, as `kubectl get -o yaml` prints several objects.
func isList(u *unstructured.Unstructured) bool {
	_, ok := u.Object["items"].([]any)
	return ok && strings.HasSuffix(u.GetKind(), "List")
}

func describe(v any) string {
	switch v.(type) {
	case []any:
		return "a sequence"
	case string:
		return "a string"
	case nil:
		return "empty"
	default:
		return "a scalar"
	}
}

// eachDocument calls fn with every document of text, decoded with integers kept as integers
// (as the API server decodes them), in order. A document that starts with '{' and is JSON may
// be a stream of several JSON values, each a document of its own; one that is not JSON is
// YAML (a flow mapping). A key given twice in a mapping is an error, in YAML and in JSON alike:
// silently keeping one of the two values would schedule something the user did not write.
func eachDocument(text []byte, source string, fn func(place, any) error) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(text)))
	doc := 0
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: reading document %d: %w", source, doc+1, err)
		}
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) == 0 {
			continue
		}
		if trimmed[0] == '{' || trimmed[0] == '[' {
			if n, err := eachJSONValue(trimmed, source, doc, fn); n > 0 || err != nil {
				doc += n
				if err != nil {
					return err
				}
				continue
			}
		}
		doc++
		at := place{source: source, doc: doc}
		j, err := yaml.YAMLToJSONStrict(raw)
		if err != nil {
			return fmt.Errorf("%s: %s", at, yamlError(err))
		}
		var obj any
		if err := unmarshalStrict(j, &obj); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if obj == nil {
			continue // comments only
		}
		if err := fn(at, obj); err != nil {
			return err
		}
	}
}

// eachJSONValue calls fn with every JSON value of b and returns how many it read. It reads
// none, and returns no error, when b does not start with a JSON value: b is then YAML.
func eachJSONValue(b []byte, source string, before int, fn func(place, any) error) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			if n == 0 {
				return 0, nil
			}
			return n, fmt.Errorf("%s: not valid JSON after the %d object(s) before it: %w", place{source: source, doc: before + n + 1}, n, err)
		}
		n++
		at := place{source: source, doc: before + n}
		var obj any
		if err := unmarshalStrict(raw, &obj); err != nil {
			return n, fmt.Errorf("%s: %w", at, err)
		}
		if err := fn(at, obj); err != nil {
			return n, err
		}
	}
}

// unmarshalStrict decodes JSON as the API server does — integers as int64, keys case
// sensitive — and refuses a key given twice.
func unmarshalStrict(j []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s: a key may appear only once in a mapping", strings.Join(msgs, "; "))
	}
	return nil
}

// yamlError makes the YAML parser's message one line; its line numbers count from the start of
// the document.
func yamlError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
	if strings.Contains(msg, "already set in map") {
		msg += " (lines count from the document's start; a key may appear only once in a mapping)"
	}
	return msg
}

// checkKind returns the group, version and kind of an object, or says what is wrong with its
// apiVersion and kind: both are needed, and a fleet holds only some kinds, each at one version.
func checkKind(apiVersion, kind string) (schema.GroupVersionKind, error) {
	if kind == "" || apiVersion == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("an object needs apiVersion and kind, such as apiVersion: %s and kind: Placement", clusterv1beta1.SchemeGroupVersion)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("apiVersion %q is not a group and version such as %s", apiVersion, clusterv1beta1.SchemeGroupVersion)
	}
	gvk := gv.WithKind(kind)
	return gvk, kindOfFleet(gvk, apiVersion)
}

// kindOfFleet says why a fleet does not hold gvk, or returns nil.
func kindOfFleet(gvk schema.GroupVersionKind, apiVersion string) error {
	k, ok := fleetKinds[gvk.Kind]
	if !ok {
		for name := range fleetKinds {
			if strings.EqualFold(name, gvk.Kind) {
				return fmt.Errorf("kind %q is not a kind of a fleet: kinds are case-sensitive; did you mean %s?", gvk.Kind, name)
			}
		}
		return fmt.Errorf("%s (%s) is not part of a fleet: a fleet file holds %s", gvk.Kind, apiVersion, supportedKinds)
	}
	if gvk.GroupVersion() != k.gv {
		return fmt.Errorf("%s has apiVersion %s, not %s: set apiVersion: %s", gvk.Kind, k.gv, apiVersion, k.gv)
	}
	return nil
}

func (f *Fleet) addUnstructured(u *unstructured.Unstructured, at place) error {
	gvk, err := checkKind(u.GetAPIVersion(), u.GetKind())
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	k := fleetKinds[gvk.Kind]
	if !k.namespaced {
		u.SetNamespace("") // as the API server does for cluster-scoped kinds
	} else if u.GetNamespace() == "" {
		u.SetNamespace("default") // as kubectl apply would
	}
	what := fmt.Sprintf("%s %q", gvk.Kind, u.GetName())
	if k.namespaced {
		what = fmt.Sprintf("%s %q", gvk.Kind, u.GetNamespace()+"/"+u.GetName())
	}
	server := "the hub's API server"
	if gvk.Group == "" {
		server = "the cluster's API server" // Nodes and Pods live in the managed clusters
	}
	invalid := func(errs field.ErrorList) error {
		return fmt.Errorf("%s: %s is invalid (%s would refuse it): %s", at, what, server, fieldErrors(errs))
	}
	if errs := oversizedMetadata(u); len(errs) > 0 {
		return invalid(errs)
	}
	s, err := hubSchemas.lookup(gvk)
	if err != nil {
		return fmt.Errorf("loading the hub's CRDs: %w", err)
	}
	if s != nil {
		if errs := s.defaultAndValidate(context.Background(), u); len(errs) > 0 {
			return invalid(errs)
		}
	}
	obj, err := Scheme.New(gvk)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", at, what, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		if p := failingField(gvk, u.Object); p != nil && !strings.Contains(err.Error(), "unknown field") {
			return fmt.Errorf("%s: %s: %s: %w", at, what, p, err)
		}
		return fmt.Errorf("%s: %s: %w", at, what, err)
	}
	if errs := numbersKept(u.Object, obj); len(errs) > 0 {
		return invalid(errs)
	}
	switch o := obj.(type) {
	case *corev1.Node:
		if errs := validateNode(o); len(errs) > 0 {
			return invalid(errs)
		}
	case *corev1.Pod:
		if errs := validatePod(o); len(errs) > 0 {
			return invalid(errs)
		}
		defaultRequests(o)
	case *fleetfitv1alpha1.HPAIntent:
		if errs := validation.ValidateHPAIntent(o); len(errs) > 0 {
			return invalid(errs)
		}
	case *corev1.Namespace:
		return nil
	}
	if err := f.remember(gvk.Kind, u.GetNamespace(), u.GetName(), what, at); err != nil {
		return err
	}
	if err := f.Add(obj); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return nil
}

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

// remember records where an object was read, or says that it was read before, and where.
func (f *Fleet) remember(kind, namespace, name, what string, at place) error {
	key := objectKey(kind, namespace, name)
	if before, dup := f.places[key]; dup {
		return fmt.Errorf("%s appears twice: in %s and in %s; give each object a name of its own, or remove one", what, before, at)
	}
	if f.places == nil {
		f.places = map[string]place{}
	}
	f.places[key] = at
	return nil
}

func objectKey(kind, namespace, name string) string { return kind + " " + namespace + "/" + name }

// where says where an object was read, as " (fleet.yaml, document 3)", or nothing when it was
// not read from a file.
func (f *Fleet) where(kind, namespace, name string) string {
	if at, ok := f.places[objectKey(kind, namespace, name)]; ok {
		return " (" + at.String() + ")"
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

// defaultRequests applies the API server's defaulting of a pod's containers that the agent sees
// applied: a resource with a limit and no request requests its limit.
func defaultRequests(pod *corev1.Pod) {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}
