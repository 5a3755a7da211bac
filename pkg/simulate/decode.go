package simulate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
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

// supportedKinds is what an error about an unknown kind lists.
const supportedKinds = "ManagedCluster, ManagedClusterSet, ManagedClusterSetBinding, AddOnPlacementScore, ClusterInventory, " +
	"Placement, PlacementDecision, HPAIntent, Node, Pod (Namespaces are ignored; a List may hold any of them)"

// Decode reads a fleet file — YAML documents separated by "---", or JSON, each an object or a
// List of objects — into f. Objects of the hub's CRDs get the defaults the API server would
// give them, unknown fields are errors (a typo must not be silently dropped), and HPAIntents
// are checked as admission checks them. source names the input in errors.
func (f *Fleet) Decode(r io.Reader, source string) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for doc := 1; ; doc++ {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: reading document %d: %w", source, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &obj.Object); err != nil {
			return fmt.Errorf("%s: document %d: %w", source, doc, err)
		}
		if len(obj.Object) == 0 {
			continue // a document of comments only
		}
		items := []unstructured.Unstructured{*obj}
		if obj.IsList() {
			list, err := obj.ToList()
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", source, doc, err)
			}
			items = list.Items
		}
		for i := range items {
			if err := f.addUnstructured(&items[i]); err != nil {
				return fmt.Errorf("%s: document %d: %w", source, doc, err)
			}
		}
	}
}

// namespaced are the namespaced kinds of a fleet.
var namespaced = map[string]bool{
	"ManagedClusterSetBinding": true, "AddOnPlacementScore": true, "ClusterInventory": true,
	"Placement": true, "PlacementDecision": true, "HPAIntent": true, "Pod": true,
}

func (f *Fleet) addUnstructured(u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	what := fmt.Sprintf("%s %q", gvk.Kind, u.GetName())
	if u.GetNamespace() != "" {
		what = fmt.Sprintf("%s %q", gvk.Kind, u.GetNamespace()+"/"+u.GetName())
	}
	if gvk.Kind == "" || gvk.Version == "" {
		return fmt.Errorf("an object without apiVersion and kind: every object needs both")
	}
	if !Scheme.Recognizes(gvk) {
		return fmt.Errorf("%s: %s is not part of a fleet; a fleet file holds %s", what, gvk, supportedKinds)
	}
	if u.GetNamespace() == "" && namespaced[gvk.Kind] {
		u.SetNamespace("default") // as kubectl apply would
	}
	if err := hubDefaults.apply(gvk, u.Object); err != nil {
		return err
	}
	obj, err := Scheme.New(gvk)
	if err != nil {
		return err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		defaultRequests(pod)
	}
	if in, ok := obj.(*fleetfitv1alpha1.HPAIntent); ok {
		if errs := validation.ValidateHPAIntent(in); len(errs) > 0 {
			return fmt.Errorf("%s is invalid (the hub's API server would refuse it): %w", what, errs.ToAggregate())
		}
	}
	return f.Add(obj)
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
