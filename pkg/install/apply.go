package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the server-side apply field manager of everything fleetfit
// installs. It is also the manager the API server derives from the CLI's user
// agent (fleetfit/<version>) for its plain updates, so fields written by older
// installers count as fleetfit's own.
const FieldManager = "fleetfit"

// Decode splits multi-document YAML (or JSON) into objects, in order, skipping
// empty documents.
func Decode(manifests ...[]byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for _, m := range manifests {
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(m), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("decoding manifests: %w", err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if obj.GetKind() == "" || obj.GetAPIVersion() == "" || obj.GetName() == "" {
				return nil, fmt.Errorf("decoding manifests: an object without apiVersion, kind or name: %v", obj.Object)
			}
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// ApplyOptions change how Apply writes.
type ApplyOptions struct {
	// DryRun asks the API server to validate and default every object
	// without persisting it.
	DryRun bool
	// ForceConflicts takes over fields that another field manager set to a
	// different value, as kubectl apply --server-side --force-conflicts does.
	// Without it, conflicts with fleetfit's own earlier writes are still
	// taken over, and any other conflict is returned as a *ConflictError.
	ForceConflicts bool
}

// Result is what Apply did to one object.
type Result struct {
	// Kind and Group name the object's type, Namespace and Name the object.
	Kind, Group, Namespace, Name string
	// Object is the object as the API server returned it; nil when Skipped.
	Object *unstructured.Unstructured
	// DryRun says the object was only validated by the server.
	DryRun bool
	// Skipped says why a dry run could not send the object to the server,
	// e.g. because its namespace is created by the same apply.
	Skipped string
}

// Ref is the object's name as kubectl prints it: kind.group/name, e.g.
// deployment.apps/fleetfit-hub or namespace/fleetfit-system.
func (r Result) Ref() string {
	kind := strings.ToLower(r.Kind)
	if r.Group != "" {
		kind += "." + r.Group
	}
	return kind + "/" + r.Name
}

// String is a kubectl-like report line.
func (r Result) String() string {
	switch {
	case r.Skipped != "":
		return fmt.Sprintf("%s serverside-applied (dry run, not sent to the server: %s)", r.Ref(), r.Skipped)
	case r.DryRun:
		return r.Ref() + " serverside-applied (server dry run)"
	default:
		return r.Ref() + " serverside-applied"
	}
}

// ConflictError is an apply that other field managers' values stand in the
// way of. Taking the fields over (ApplyOptions.ForceConflicts) overwrites
// what they set.
type ConflictError struct {
	// Ref names the object as Result.Ref does.
	Ref string
	// Managers are the other field managers, sorted; Fields the conflicting
	// field paths, in the server's order.
	Managers []string
	Fields   []string
	Err      error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("applying %s: fields set by another field manager (%s) have different values: %s",
		e.Ref, strings.Join(quoteAll(e.Managers), ", "), strings.Join(e.Fields, ", "))
}

func (e *ConflictError) Unwrap() error { return e.Err }

// Applier applies objects with server-side apply, finding each kind's
// resource through discovery.
type Applier struct {
	client dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

// NewApplier returns an Applier for the cluster of cfg.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Applier{client: client, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
}

// Apply applies the objects in order with field manager FieldManager and
// stops at the first error. It returns what it did up to then, so callers
// can report partial progress. Applying the same objects again changes
// nothing: the server skips writes that leave an object as it is.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) ([]Result, error) {
	created := map[string]bool{} // namespaces applied by this call
	var results []Result
	for _, obj := range objs {
		r, err := a.applyOne(ctx, obj, opts, created)
		if err != nil {
			return results, err
		}
		if r.Kind == "Namespace" && r.Group == "" {
			created[r.Name] = true
		}
		results = append(results, r)
	}
	return results, nil
}

// ApplyManifests decodes multi-document YAML and applies it, as Apply does.
func (a *Applier) ApplyManifests(ctx context.Context, opts ApplyOptions, manifests ...[]byte) ([]Result, error) {
	objs, err := Decode(manifests...)
	if err != nil {
		return nil, err
	}
	return a.Apply(ctx, objs, opts)
}

func (a *Applier) applyOne(ctx context.Context, obj *unstructured.Unstructured, opts ApplyOptions, dryRunNamespaces map[string]bool) (Result, error) {
	gvk := obj.GroupVersionKind()
	r := Result{Kind: gvk.Kind, Group: gvk.Group, Name: obj.GetName(), DryRun: opts.DryRun}
	mapping, err := a.mapping(obj)
	if opts.DryRun && meta.IsNoMatchError(err) {
		// A dry run does not create the CRD that would serve it.
		r.Skipped = fmt.Sprintf("the cluster does not serve %s yet", gvk.GroupKind())
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("applying %s: %w", r.Ref(), err)
	}
	ri := dynamic.ResourceInterface(a.client.Resource(mapping.Resource))
	obj = obj.DeepCopy()
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		r.Namespace = obj.GetNamespace()
		if r.Namespace == "" {
			return r, fmt.Errorf("applying %s: a namespaced object without a namespace", r.Ref())
		}
		ri = a.client.Resource(mapping.Resource).Namespace(r.Namespace)
	} else {
		obj.SetNamespace("")
	}

	apply := func(force bool) (*unstructured.Unstructured, error) {
		o := metav1.ApplyOptions{FieldManager: FieldManager, Force: force}
		if opts.DryRun {
			o.DryRun = []string{metav1.DryRunAll}
		}
		return ri.Apply(ctx, obj.GetName(), obj, o)
	}
	got, err := apply(opts.ForceConflicts)
	if apierrors.IsConflict(err) && !opts.ForceConflicts {
		managers, fields := conflicts(err)
		if len(managers) > 0 && !slices.ContainsFunc(managers, func(m string) bool { return m != FieldManager }) {
			// Only fleetfit's own earlier writes (e.g. an older version's
			// values, or plain updates with the same manager name) are in
			// the way: they are ours to replace.
			got, err = apply(true)
		} else if len(managers) > 0 {
			others := slices.DeleteFunc(managers, func(m string) bool { return m == FieldManager })
			return r, &ConflictError{Ref: r.Ref(), Managers: others, Fields: fields, Err: err}
		}
	}
	if err != nil {
		if opts.DryRun && dryRunNamespaces[r.Namespace] && isNamespaceNotFound(err, r.Namespace) {
			r.Skipped = fmt.Sprintf("namespace %s does not exist yet", r.Namespace)
			return r, nil
		}
		return r, fmt.Errorf("applying %s: %w", r.Ref(), err)
	}
	r.Object = got
	return r, nil
}

// mapping finds the resource of obj's kind, rediscovering once when the kind
// is unknown: it may be served by a CRD that this applier just created.
func (a *Applier) mapping(obj *unstructured.Unstructured) (*meta.RESTMapping, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		a.mapper.Reset()
		m, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("finding the resource of %s: %w", gvk, err)
	}
	return m, nil
}

// conflicts reads the other field managers and the field paths out of the
// API server's apply conflict, whose causes say `conflict with "manager"
// using apps/v1 at <time>`. Managers are sorted and unique.
func conflicts(err error) (managers, fields []string) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return nil, nil
	}
	for _, c := range status.Status().Details.Causes {
		if c.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		rest, ok := strings.CutPrefix(c.Message, "conflict with ")
		if !ok {
			continue
		}
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			continue
		}
		m, err := strconv.Unquote(quoted)
		if err != nil {
			continue
		}
		managers = append(managers, m)
		fields = append(fields, c.Field)
	}
	slices.Sort(managers)
	return slices.Compact(managers), fields
}

func isNamespaceNotFound(err error, ns string) bool {
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d != nil && d.Kind == "namespaces" && d.Name == ns
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}
