// Package validation checks HPAIntents in Go, for the hub controller and for
// the CLI, which validates files before they reach a cluster.
//
// It enforces everything the CRD enforces at admission — its OpenAPI schema
// and its x-kubernetes-validations (CEL) rules — with the same messages, so a
// user gets the same answer offline and from the API server, and it adds what
// the CRD cannot check: resource names and node label keys and values that
// Kubernetes would refuse, and amounts that cannot be converted from EMCO's
// legacy units. A test evaluates the generated CRD in-process to keep the two
// in step.
//
// Go sees quantities after decoding, when their spelling is gone, while the
// CRD sees the request body. A Go client sends the canonical form (2000m as
// 2, 1000 as 1k), so for what Go clients send the two agree. Text a person
// sends directly can differ in two ways, both where the CRD refuses what Go,
// seeing only the value, accepts: whole numbers spelt with a fraction (cpu
// 2000m with exclusiveCPU, 1000.0 with units, -0), and amounts spelt with an
// exponent of four digits or more (1e-1000, 0e1000), which the CRD refuses
// without parsing them because the API server would take minutes to parse
// or compare some of them (1e-709551616, 1e709551616).
package validation

import (
	"time"

	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Limits from the API types' markers.
const (
	maxConsumers    = 32
	maxRequirements = 32
	maxNameLength   = 63
	maxRefLength    = 253
)

// targetKinds are the kinds a consumer can target, in the CRD enum's order so
// that the list in our message reads like the API server's.
var targetKinds = []string{"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"}

// Messages of the CRD's CEL rules, word for word. Changing one here without
// changing the marker in the API types fails the CRD agreement test.
const (
	msgOneAmountPerResource = "two mandatory requirements ask for amounts of the same resource, but a container has one request and one limit per resource; keep one of them, or make the other optional"
	msgContainerRequired    = "target.container is required when the consumer has resource requirements: it names the container that gets the requests and limits"
	msgExclusiveCPU         = "exclusiveCPU needs a mandatory cpu requirement with whole cores and requests equal to limits (Guaranteed QoS), e.g. requests: 4, limits: 4"
	msgExclusiveMemory      = "exclusiveCPU needs a mandatory memory requirement with requests equal to limits (Guaranteed QoS)"
)

// ValidateHPAIntent returns every problem with the intent's spec, with paths
// rooted at "spec", or nil when the intent is valid. Unlike the API server it
// goes on after schema errors, so one call reports all it can. An intent it
// accepts is accepted by the CRD when sent by a Go client, and its resource
// amounts convert without error (ResourceAmount.EffectiveRequests and
// EffectiveLimits). Metadata and status are not checked.
func ValidateHPAIntent(intent *v1alpha1.HPAIntent) field.ErrorList {
	if intent == nil {
		return field.ErrorList{field.Required(field.NewPath("spec"), "no HPAIntent to validate")}
	}
	return validateSpec(&intent.Spec, field.NewPath("spec"))
}

func validateSpec(spec *v1alpha1.HPAIntentSpec, path *field.Path) field.ErrorList {
	errs := validateRequiredString(path.Child("placementRef", "name"), spec.PlacementRef.Name, maxRefLength)

	consumersPath := path.Child("consumers")
	errs = append(errs, validateMaxItems(consumersPath, len(spec.Consumers), maxConsumers)...)
	names := make([]string, len(spec.Consumers))
	for i := range spec.Consumers {
		names[i] = spec.Consumers[i].Name
		errs = append(errs, validateConsumer(&spec.Consumers[i], consumersPath.Index(i))...)
	}
	errs = append(errs, validateUniqueNames(consumersPath, names)...)
	errs = append(errs, validateRescheduling(spec.Rescheduling, path.Child("rescheduling"))...)
	errs = append(errs, validateSplit(spec, path.Child("split"))...)
	errs = append(errs, validateScaleUp(spec.ScaleUp, path.Child("scaleUp"))...)
	return errs
}

// validateScaleUp checks what the CRD's schema and rule check of spec.scaleUp.
func validateScaleUp(s *v1alpha1.ScaleUp, path *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	switch s.Policy {
	case "", v1alpha1.ScaleUpIfNeeded, v1alpha1.ScaleUpNever:
	default:
		errs = append(errs, field.NotSupported(path.Child("policy"), s.Policy,
			[]string{string(v1alpha1.ScaleUpIfNeeded), string(v1alpha1.ScaleUpNever)}))
	}
	if d := s.MaxWait; d != nil && (d.Duration < time.Minute || d.Duration > 24*time.Hour) {
		errs = append(errs, field.Invalid(path.Child("maxWait"), d.Duration.String(), "maxWait must be between 1m and 24h (10m when left out)"))
	}
	return errs
}

// validateRescheduling checks what the CRD's schema and rule check of spec.rescheduling.
func validateRescheduling(r *v1alpha1.Rescheduling, path *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	switch r.Policy {
	case "", v1alpha1.ReschedulingIfUnschedulable, v1alpha1.ReschedulingNever:
	default:
		errs = append(errs, field.NotSupported(path.Child("policy"), r.Policy,
			[]string{string(v1alpha1.ReschedulingIfUnschedulable), string(v1alpha1.ReschedulingNever)}))
	}
	if d := r.UnschedulableFor; d != nil && (d.Duration < 30*time.Second || d.Duration > 24*time.Hour) {
		errs = append(errs, field.Invalid(path.Child("unschedulableFor"), d.Duration.String(),
			"unschedulableFor must be between 30s and 24h: pods wait a little while a node starts or a job ends, so a shorter time moves workloads that would have run (5m when left out)"))
	}
	if n := r.MaxMovesPerHour; n != nil {
		errs = append(errs, validateMinimum(path.Child("maxMovesPerHour"), int64(*n), 1)...)
		errs = append(errs, validateMaximum(path.Child("maxMovesPerHour"), int64(*n), 60)...)
	}
	return errs
}

func validateConsumer(c *v1alpha1.ResourceConsumer, path *field.Path) field.ErrorList {
	errs := validateRequiredString(path.Child("name"), c.Name, maxNameLength)
	errs = append(errs, validateTarget(&c.Target, path.Child("target"))...)
	if c.Replicas != nil {
		errs = append(errs, validateMinimum(path.Child("replicas"), int64(*c.Replicas), 1)...)
	}

	reqsPath := path.Child("requirements")
	errs = append(errs, validateMaxItems(reqsPath, len(c.Requirements), maxRequirements)...)
	names := make([]string, len(c.Requirements))
	hasResource, hasMachineType, mandatoryMachineTypes := false, false, 0
	for i := range c.Requirements {
		r := &c.Requirements[i]
		names[i] = r.Name
		hasResource = hasResource || r.Resource != nil
		hasMachineType = hasMachineType || r.MachineType != nil
		if r.MachineType != nil && r.IsMandatory() {
			mandatoryMachineTypes++
		}
		errs = append(errs, validateRequirement(r, reqsPath.Index(i))...)
	}
	if hasResource && hasMachineType {
		errs = append(errs, field.Invalid(reqsPath, field.OmitValueType{}, msgMachineTypeAndAmounts))
	}
	if mandatoryMachineTypes > 1 {
		errs = append(errs, field.Invalid(reqsPath, field.OmitValueType{}, msgOneMandatoryMachineType))
	}
	for _, i := range sameMandatoryResource(c.Requirements) {
		errs = append(errs, field.Invalid(reqsPath.Index(i).Child("resource", "name"), c.Requirements[i].Resource.Name, msgOneAmountPerResource))
	}
	errs = append(errs, validateUniqueNames(reqsPath, names)...)

	if hasResource && c.Target.Container == "" {
		errs = append(errs, field.Required(path.Child("target", "container"), msgContainerRequired))
	}
	if c.ExclusiveCPU {
		errs = append(errs, validateExclusiveCPU(c, path.Child("exclusiveCPU"))...)
	}
	return errs
}

// sameMandatoryResource returns the indexes of the mandatory resource
// requirements that ask for a resource an earlier mandatory one asks for: a
// container has one request and one limit per resource, so both could never
// be delivered. (The CRD's rule, which cannot say which, names the list.)
func sameMandatoryResource(reqs []v1alpha1.ResourceRequirement) []int {
	seen := map[string]bool{}
	var again []int
	for i := range reqs {
		r := &reqs[i]
		if r.Resource == nil || !r.IsMandatory() {
			continue
		}
		if seen[r.Resource.Name] {
			again = append(again, i)
		}
		seen[r.Resource.Name] = true
	}
	return again
}

func validateTarget(t *v1alpha1.ConsumerTarget, path *field.Path) field.ErrorList {
	errs := validateRequiredString(path.Child("apiVersion"), t.APIVersion, maxRefLength)
	errs = append(errs, validateEnum(path.Child("kind"), t.Kind, targetKinds)...)
	errs = append(errs, validateRequiredString(path.Child("name"), t.Name, maxRefLength)...)
	errs = append(errs, validateMaxLength(path.Child("container"), t.Container, maxNameLength)...)
	return errs
}

// validateExclusiveCPU checks that the kubelet's static CPU manager would
// give the consumer's pods exclusive cores: that needs Guaranteed QoS (cpu and
// memory requests equal to limits) and whole cores of cpu. Only mandatory
// requirements count, since an optional one may be dropped.
func validateExclusiveCPU(c *v1alpha1.ResourceConsumer, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !hasGuaranteedResource(c.Requirements, "cpu", true) {
		errs = append(errs, field.Invalid(path, c.ExclusiveCPU, msgExclusiveCPU))
	}
	if !hasGuaranteedResource(c.Requirements, "memory", false) {
		errs = append(errs, field.Invalid(path, c.ExclusiveCPU, msgExclusiveMemory))
	}
	return errs
}

// hasGuaranteedResource reports whether a mandatory requirement for the named
// resource sets limits, and requests (if set) equal to them; with wholeUnits,
// limits must also be a whole number. Like the CEL rule, it passes over
// limits with a long exponent, which are refused anyway. Like the CEL rule it compares the
// amounts as written: units scale requests and limits alike, so they do not
// change the outcome.
func hasGuaranteedResource(reqs []v1alpha1.ResourceRequirement, name string, wholeUnits bool) bool {
	for i := range reqs {
		r := &reqs[i]
		if r.Resource == nil || r.Resource.Name != name || !r.IsMandatory() || r.Resource.Limits == nil || hasLongExponent(r.Resource.Limits) {
			continue
		}
		limits := r.Resource.Limits
		if wholeUnits && !isCELInteger(limits) {
			continue
		}
		if r.Resource.Requests == nil || v1alpha1.CompareQuantities(*r.Resource.Requests, *limits) == 0 {
			return true
		}
	}
	return false
}

// validateUniqueNames reports each name that repeats, once, at its second
// occurrence, which is where the API server reports the duplicate key of a
// list-type map.
func validateUniqueNames(path *field.Path, names []string) field.ErrorList {
	var errs field.ErrorList
	seen := make(map[string]int, len(names))
	for i, name := range names {
		seen[name]++
		if seen[name] == 2 {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), name))
		}
	}
	return errs
}

// describe formats a Go-only finding: what is expected, with an example, then
// what the Kubernetes validator said is wrong.
func describe(expected string, problems []string) string {
	return strings.Join(append([]string{expected}, problems...), "; ")
}
