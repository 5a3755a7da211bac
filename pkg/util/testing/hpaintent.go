// Package testing holds builders of fleetfit and Kubernetes objects for unit
// and integration tests. Builders start from the smallest object that makes
// sense and each method sets one thing, so a test reads as the difference it
// cares about. Obj returns a copy, so one builder can seed several objects.
package testing

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// HPAIntentWrapper builds an HPAIntent.
type HPAIntentWrapper struct{ v1alpha1.HPAIntent }

// MakeHPAIntent starts an HPAIntent with a name and namespace, and nothing in
// its spec: it is invalid until it has a placement and a consumer.
func MakeHPAIntent(name, namespace string) *HPAIntentWrapper {
	return &HPAIntentWrapper{v1alpha1.HPAIntent{
		TypeMeta: metav1.TypeMeta{
			APIVersion: v1alpha1.SchemeGroupVersion.String(),
			Kind:       "HPAIntent",
		},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Obj returns a copy of the intent built so far.
func (w *HPAIntentWrapper) Obj() *v1alpha1.HPAIntent {
	return w.DeepCopy()
}

// Clone returns an independent builder holding a copy of the intent.
func (w *HPAIntentWrapper) Clone() *HPAIntentWrapper {
	return &HPAIntentWrapper{*w.DeepCopy()}
}

// Placement sets the name of the Placement the intent refers to.
func (w *HPAIntentWrapper) Placement(name string) *HPAIntentWrapper {
	w.Spec.PlacementRef.Name = name
	return w
}

// Consumer appends consumers, typically MakeConsumer(...).Obj().
func (w *HPAIntentWrapper) Consumer(consumers ...v1alpha1.ResourceConsumer) *HPAIntentWrapper {
	for i := range consumers {
		w.Spec.Consumers = append(w.Spec.Consumers, *consumers[i].DeepCopy())
	}
	return w
}

// Split divides the intent's replicas among its placement's clusters.
func (w *HPAIntentWrapper) Split(s v1alpha1.ReplicaSplit) *HPAIntentWrapper {
	w.Spec.Split = &s
	return w
}

// Manifest appends an object to the workload the intent delivers, encoded as
// JSON as a ManifestWork holds it; it panics when obj cannot be encoded, as
// tests only pass well-formed objects.
func (w *HPAIntentWrapper) Manifest(obj any) *HPAIntentWrapper {
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(fmt.Sprintf("encoding manifest %T: %v", obj, err))
	}
	if w.Spec.Workload == nil {
		w.Spec.Workload = &v1alpha1.Workload{}
	}
	m := v1alpha1.Manifest{}
	m.Raw = raw
	w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, m)
	return w
}

// ConsumerWrapper builds a ResourceConsumer.
type ConsumerWrapper struct{ v1alpha1.ResourceConsumer }

// MakeConsumer starts a consumer with only a name: it needs a target and
// requirements to be valid.
func MakeConsumer(name string) *ConsumerWrapper {
	return &ConsumerWrapper{v1alpha1.ResourceConsumer{Name: name}}
}

// Obj returns a copy of the consumer built so far.
func (w *ConsumerWrapper) Obj() v1alpha1.ResourceConsumer {
	return *w.DeepCopy()
}

// Target sets the kind, name and container of the target object, with the
// apiVersion Kubernetes serves that kind at (apps/v1, batch/v1 or v1; an
// unknown kind gets apps/v1, so that tests of the kind enum stay small).
func (w *ConsumerWrapper) Target(kind, name, container string) *ConsumerWrapper {
	apiVersion := "apps/v1"
	switch kind {
	case "Job", "CronJob":
		apiVersion = "batch/v1"
	case "Pod":
		apiVersion = "v1"
	}
	w.ResourceConsumer.Target = v1alpha1.ConsumerTarget{
		APIVersion: apiVersion,
		Kind:       kind,
		Name:       name,
		Container:  container,
	}
	return w
}

// TargetAPIVersion overrides the apiVersion Target chose.
func (w *ConsumerWrapper) TargetAPIVersion(apiVersion string) *ConsumerWrapper {
	w.ResourceConsumer.Target.APIVersion = apiVersion
	return w
}

// Replicas sets how many pods of the consumer one cluster must host.
func (w *ConsumerWrapper) Replicas(n int32) *ConsumerWrapper {
	w.ResourceConsumer.Replicas = ptr.To(n)
	return w
}

// ExclusiveCPU asks for exclusive cores.
func (w *ConsumerWrapper) ExclusiveCPU() *ConsumerWrapper {
	w.ResourceConsumer.ExclusiveCPU = true
	return w
}

// Requirement appends requirements, typically MakeResource(...).Obj() or
// MakeFeature(...).Obj().
func (w *ConsumerWrapper) Requirement(reqs ...v1alpha1.ResourceRequirement) *ConsumerWrapper {
	for i := range reqs {
		w.Requirements = append(w.Requirements, *reqs[i].DeepCopy())
	}
	return w
}

// RequirementWrapper builds a ResourceRequirement.
type RequirementWrapper struct{ v1alpha1.ResourceRequirement }

// MakeRequirement starts a mandatory requirement that is neither a resource
// nor a feature yet; Resource or Feature picks one.
func MakeRequirement(name string) *RequirementWrapper {
	return &RequirementWrapper{v1alpha1.ResourceRequirement{Name: name}}
}

// MakeResource starts a mandatory requirement for an amount of the named
// Kubernetes resource, with neither requests nor limits yet.
func MakeResource(name, resourceName string) *RequirementWrapper {
	return MakeRequirement(name).Resource(resourceName)
}

// MakeFeature starts a mandatory requirement on a node label, with the
// default operator (In) and no values yet.
func MakeFeature(name, key string) *RequirementWrapper {
	return MakeRequirement(name).Feature(key)
}

// MakeMachineTypeRequirement starts a mandatory requirement for one machine of a
// MachineGroup's type per replica.
func MakeMachineTypeRequirement(name, group, machineType string) *RequirementWrapper {
	return MakeRequirement(name).MachineType(group, machineType)
}

// MachineType sets the machine type, leaving a resource or feature in place,
// like Resource.
func (w *RequirementWrapper) MachineType(group, name string) *RequirementWrapper {
	w.ResourceRequirement.MachineType = &v1alpha1.MachineTypeRequirement{Group: group, Name: name}
	return w
}

// Obj returns a copy of the requirement built so far.
func (w *RequirementWrapper) Obj() v1alpha1.ResourceRequirement {
	return *w.DeepCopy()
}

// Mandatory sets mandatory explicitly; leaving it unset means mandatory.
func (w *RequirementWrapper) Mandatory(mandatory bool) *RequirementWrapper {
	w.ResourceRequirement.Mandatory = ptr.To(mandatory)
	return w
}

// Optional makes the requirement optional with the given weight.
func (w *RequirementWrapper) Optional(weight int32) *RequirementWrapper {
	w.ResourceRequirement.Mandatory = ptr.To(false)
	w.ResourceRequirement.Weight = ptr.To(weight)
	return w
}

// Weight sets the weight alone, leaving mandatory as it is.
func (w *RequirementWrapper) Weight(weight int32) *RequirementWrapper {
	w.ResourceRequirement.Weight = ptr.To(weight)
	return w
}

// Resource sets a resource amount of the named resource, replacing any
// earlier one. It leaves a feature in place, so that tests can build the
// invalid requirement that sets both.
func (w *RequirementWrapper) Resource(resourceName string) *RequirementWrapper {
	w.ResourceRequirement.Resource = &v1alpha1.ResourceAmount{Name: resourceName}
	return w
}

// Feature sets a feature on the given node label key, replacing any earlier
// one and leaving a resource amount in place, like Resource.
func (w *RequirementWrapper) Feature(key string) *RequirementWrapper {
	w.ResourceRequirement.Feature = &v1alpha1.FeatureRequirement{Key: key}
	return w
}

// Requests sets the requests of the resource amount; it panics on a string
// that is not a quantity, as tests only use literals.
func (w *RequirementWrapper) Requests(q string) *RequirementWrapper {
	w.amount().Requests = ptr.To(resource.MustParse(q))
	return w
}

// Limits sets the limits of the resource amount; it panics like Requests.
func (w *RequirementWrapper) Limits(q string) *RequirementWrapper {
	w.amount().Limits = ptr.To(resource.MustParse(q))
	return w
}

// Units sets EMCO's legacy units of the resource amount.
func (w *RequirementWrapper) Units(units string) *RequirementWrapper {
	w.amount().Units = units
	return w
}

// Operator sets the operator of the feature.
func (w *RequirementWrapper) Operator(op corev1.NodeSelectorOperator) *RequirementWrapper {
	w.feature().Operator = op
	return w
}

// Values sets the values of the feature.
func (w *RequirementWrapper) Values(values ...string) *RequirementWrapper {
	w.feature().Values = values
	return w
}

// Value sets EMCO's one-value shorthand of the feature.
func (w *RequirementWrapper) Value(value string) *RequirementWrapper {
	w.feature().Value = value
	return w
}

// amount returns the resource amount, creating an unnamed one so that a
// builder chain never panics on a nil pointer.
func (w *RequirementWrapper) amount() *v1alpha1.ResourceAmount {
	if w.ResourceRequirement.Resource == nil {
		w.ResourceRequirement.Resource = &v1alpha1.ResourceAmount{}
	}
	return w.ResourceRequirement.Resource
}

// feature returns the feature, creating one without a key like amount does.
func (w *RequirementWrapper) feature() *v1alpha1.FeatureRequirement {
	if w.ResourceRequirement.Feature == nil {
		w.ResourceRequirement.Feature = &v1alpha1.FeatureRequirement{}
	}
	return w.ResourceRequirement.Feature
}
