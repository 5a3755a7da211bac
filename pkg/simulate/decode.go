package simulate

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1/validation"
)

// Scheme knows every kind a fleet file may hold.
var Scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(corev1.AddToScheme(Scheme))
	utilruntime.Must(resourcev1.AddToScheme(Scheme))
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
	"MachineGroup":             {fleetfitv1alpha1.SchemeGroupVersion, false},
	"Namespace":                {corev1.SchemeGroupVersion, false},
	"ResourceSlice":            {resourcev1.SchemeGroupVersion, false},
	"DeviceClass":              {resourcev1.SchemeGroupVersion, false},
	"ResourceClaim":            {resourcev1.SchemeGroupVersion, true},
}

// supportedKinds is what an error about an unknown kind lists.
const supportedKinds = "ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding, AddOnPlacementScore, ClusterInventory, " +
	"Placement, PlacementDecision, HPAIntent, Node, Pod, MachineGroup, ResourceSlice, DeviceClass, ResourceClaim (Namespaces are ignored; a List may hold any of them)"

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
// input or one decoded before into f) is an error naming both places. Decoding stops with ctx.
func (f *Fleet) Decode(ctx context.Context, r io.Reader, source string) error {
	text, err := readText(r, source)
	if err != nil {
		return err
	}
	return eachDocument(text, source, func(at place, obj any) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, ok := obj.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: is %s, not an object: every document is one object with apiVersion and kind, or a List of them", at, describe(obj))
		}
		u := &unstructured.Unstructured{Object: m}
		if !isList(u) {
			return f.addUnstructured(ctx, u, at)
		}
		items, ok := m["items"].([]any)
		if !ok && m["items"] != nil {
			return fmt.Errorf("%s: %s: items is %s, not a sequence: a List holds its objects as a sequence under items", at, u.GetKind(), describe(m["items"]))
		}
		for i, item := range items {
			at := place{source: at.source, doc: at.doc, item: i + 1}
			m, ok := item.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: is %s, not an object", at, describe(item))
			}
			if err := f.addUnstructured(ctx, &unstructured.Unstructured{Object: m}, at); err != nil {
				return err
			}
		}
		return nil
	})
}

// isList reports whether u is a List, as `kubectl get -o yaml` prints several objects: kind
// List, or a kind ending in List (PodList, NodeList) with items, whatever they are (Decode says
// what is wrong with items that are not a sequence of objects).
func isList(u *unstructured.Unstructured) bool {
	_, hasItems := u.Object["items"]
	return u.GetKind() == "List" || (hasItems && strings.HasSuffix(u.GetKind(), "List"))
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

func (f *Fleet) addUnstructured(ctx context.Context, u *unstructured.Unstructured, at place) error {
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
	if gvk.Group == "" || gvk.Kind == "MachineGroup" || gvk.Group == resourcev1.GroupName {
		server = "the cluster's API server" // Nodes, Pods, MachineGroups and DRA objects live in the managed clusters
	}
	invalid := func(errs field.ErrorList) error {
		return fmt.Errorf("%s: %s is invalid (%s would refuse it): %s", at, what, server, fieldErrors(errs))
	}
	if errs := oversizedMetadata(u); len(errs) > 0 {
		return invalid(errs)
	}
	if errs := longExponents(u.Object); len(errs) > 0 {
		return invalid(errs)
	}
	s, err := crds.lookup(gvk)
	if err != nil {
		return fmt.Errorf("loading the CRDs: %w", err)
	}
	if s != nil {
		if errs := s.defaultAndValidate(ctx, u); len(errs) > 0 {
			return invalid(errs)
		}
	}
	obj, err := Scheme.New(gvk)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", at, what, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		if p, v, fieldErr := failingField(gvk, u.Object); p != nil && !strings.Contains(err.Error(), "unknown field") {
			return fmt.Errorf("%s: %s: %s: %s", at, what, p, conversionMessage(v, fieldErr))
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
	case *clusterv1beta2.ManagedClusterSet:
		if errs := clusterSetSelector(o); len(errs) > 0 {
			return fmt.Errorf("%s: %s has a selector OCM cannot read, and would select no cluster with: %s", at, what, fieldErrors(errs))
		}
	case *resourcev1.ResourceSlice:
		if errs := validateResourceSlice(o); len(errs) > 0 {
			return invalid(errs)
		}
	case *resourcev1.DeviceClass:
		if errs := validateDeviceClass(o); len(errs) > 0 {
			return invalid(errs)
		}
	case *resourcev1.ResourceClaim:
		if errs := validateResourceClaim(o); len(errs) > 0 {
			return invalid(errs)
		}
	case *corev1.Namespace:
		return nil
	}
	scope := u.GetNamespace()
	switch cluster := clusterOf(u); {
	case gvk.Group == resourcev1.GroupName:
		// Each managed cluster has DRA objects of its own, often of the same names.
		scope = cluster + "/" + u.GetNamespace()
		what = fmt.Sprintf("%s %q of cluster %q", gvk.Kind, u.GetName(), cluster)
	case gvk.Kind == "MachineGroup":
		// Each managed cluster has MachineGroups of its own, often of the same names.
		scope = cluster
		what = fmt.Sprintf("%s %q of cluster %q", gvk.Kind, u.GetName(), cluster)
	case gvk.Kind == "Pod" && cluster != "":
		// So do marked Pods, such as the reservation pods of a group of each cluster;
		// BuildInventories checks the pods of each cluster once it knows them all.
		scope = podScope(cluster, u.GetNamespace())
		what = fmt.Sprintf("%s %q of cluster %q", gvk.Kind, u.GetNamespace()+"/"+u.GetName(), cluster)
	}
	if err := f.remember(gvk.Kind, scope, u.GetName(), what, at); err != nil {
		return err
	}
	if err := f.Add(obj); err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return nil
}

// clusterOf is the cluster an object is marked with, as marker reads it.
func clusterOf(u *unstructured.Unstructured) string {
	if c := u.GetLabels()[ClusterLabel]; c != "" {
		return c
	}
	return u.GetAnnotations()[ClusterLabel]
}

// podScope is what a Pod marked for cluster is remembered under, beside its name.
func podScope(cluster, namespace string) string { return cluster + ":" + namespace }

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
