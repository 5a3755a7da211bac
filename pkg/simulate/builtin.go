package simulate

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The Kubernetes API server's own validation of Nodes and Pods lives in k8s.io/kubernetes,
// which is no library. What follows are the checks of it that matter to a fleet file — the
// ones without which the agent's code would count a Node or a Pod no cluster can hold — with
// the API server's field paths, so a message points where the API server's would.

var taintEffects = sets.New(corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)

// validateNode checks a Node's name, labels and annotations, its taints and its capacity and
// allocatable amounts.
func validateNode(n *corev1.Node) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&n.ObjectMeta, false, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	taints := field.NewPath("spec", "taints")
	seen := map[string]bool{}
	for i, t := range n.Spec.Taints {
		p := taints.Index(i)
		for _, msg := range validation.IsQualifiedName(t.Key) {
			errs = append(errs, field.Invalid(p.Child("key"), t.Key, msg))
		}
		if t.Value != "" {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		}
		if !taintEffects.Has(t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, slices.Sorted(slices.Values(taintEffects.UnsortedList()))))
		}
		if k := t.Key + ":" + string(t.Effect); seen[k] {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("taint %s with effect %s", t.Key, t.Effect)))
		} else {
			seen[k] = true
		}
	}
	errs = append(errs, validateResourceList(n.Status.Capacity, field.NewPath("status", "capacity"))...)
	errs = append(errs, validateResourceList(n.Status.Allocatable, field.NewPath("status", "allocatable"))...)
	return errs
}

// validatePod checks a Pod's name, namespace, labels and annotations, the node it is bound to,
// and the resources of its containers (requests never above limits), overhead and pod-level
// resources.
func validatePod(pod *corev1.Pod) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&pod.ObjectMeta, true, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	if pod.Spec.NodeName != "" {
		for _, msg := range metavalidation.NameIsDNSSubdomain(pod.Spec.NodeName, false) {
			errs = append(errs, field.Invalid(spec.Child("nodeName"), pod.Spec.NodeName, msg))
		}
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), "a pod has at least one container"))
	}
	for _, group := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", pod.Spec.InitContainers}, {"containers", pod.Spec.Containers}} {
		names := map[string]bool{}
		for i, c := range group.containers {
			p := spec.Child(group.name).Index(i)
			if c.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), ""))
			} else if names[c.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
			}
			names[c.Name] = true
			errs = append(errs, validateRequirements(&c.Resources, p.Child("resources"))...)
		}
	}
	errs = append(errs, validateResourceList(pod.Spec.Overhead, spec.Child("overhead"))...)
	if pod.Spec.Resources != nil {
		errs = append(errs, validateRequirements(pod.Spec.Resources, spec.Child("resources"))...)
	}
	return errs
}

func validateRequirements(r *corev1.ResourceRequirements, p *field.Path) field.ErrorList {
	errs := validateResourceList(r.Requests, p.Child("requests"))
	errs = append(errs, validateResourceList(r.Limits, p.Child("limits"))...)
	for _, name := range sortedNames(r.Requests) {
		limit, ok := r.Limits[name]
		if request := r.Requests[name]; ok && request.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), request.String(), fmt.Sprintf("must be less than or equal to the %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

// validateResourceList checks that every resource name is a qualified name and every amount
// is non-negative.
func validateResourceList(l corev1.ResourceList, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedNames(l) {
		q := l[name]
		for _, msg := range validation.IsQualifiedName(string(name)) {
			errs = append(errs, field.Invalid(p.Key(string(name)), string(name), msg))
		}
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(p.Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
