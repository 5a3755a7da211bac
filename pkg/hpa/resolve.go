package hpa

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1/validation"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// Resolved is an HPAIntent in resolved form. It shares nothing with the
// intent it came from.
type Resolved struct {
	// Consumers in the order of spec.consumers.
	Consumers []Consumer
	// Manifests are spec.workload.manifests decoded, in their order; nil when
	// the intent carries no workload.
	Manifests []*unstructured.Unstructured
	// Pods are the consumers grouped by target object, in the order of each
	// pod's first consumer; every consumer is in exactly one. Fit checks,
	// scores and reservations read pods, not consumers (see Pod).
	Pods []Pod
}

// Consumer is one resolved consumer.
type Consumer struct {
	Name string
	// Intent is the name of the HPAIntent, for messages that name the
	// consumer as "<intent>/<consumer>". Compile sets it; it is empty in
	// what Resolve returns.
	Intent string
	// Target is the workload object and container, as in the spec. Container
	// is empty when the consumer has only features, which bind to the pod.
	Target v1alpha1.ConsumerTarget
	// Manifest is the index in Resolved.Manifests of the target object, or -1
	// when the intent carries no workload.
	Manifest int
	// Replicas is how many pods of the consumer one cluster must host:
	// spec replicas when set, else what the target manifest says (see
	// ReplicasOf), else 1.
	Replicas int32
	// ExclusiveCPU is spec exclusiveCPU; Resolve has checked that the pod can
	// get Guaranteed QoS with whole cores.
	ExclusiveCPU bool
	// Requests are the per-replica mandatory requests in Kubernetes units:
	// requests, or limits when only limits are set. Never nil.
	Requests corev1.ResourceList
	// Limits are the mandatory limits in Kubernetes units, for the resources
	// that set them. Never nil.
	Limits corev1.ResourceList
	// Features are the mandatory node label requirements, in spec order, with
	// EMCO's value shorthand expanded to In [value] and the default operator In.
	Features []corev1.NodeSelectorRequirement
	// MachineType, when set, is the machine type each replica takes one
	// machine of; the consumer then has no Requests or Limits (validation
	// refuses both), as the managed cluster's agent gives its container the
	// type's resources.
	MachineType *v1alpha1.MachineTypeRequirement
	// Devices are the consumer's device requirements, all mandatory. They
	// are the pod's (see Pod.Devices): its Request leaves them out.
	Devices []Device
	// Optional are the optional requirements in spec order.
	Optional []OptionalRequirement
	// Request is the consumer's own mandatory requirements for one replica
	// as a fit query on a cluster's nodes (amounts, features and the
	// tolerations the pods will have), as if its container were alone in
	// the pod. Fit checks use its Pod's Request, which counts the other
	// containers of the pod too. Compile sets it; it is nil in what Resolve
	// returns.
	Request *inventory.Request
}

// MachineGuest reports whether the consumer's pods are guests of a machine
// group: whether it has a mandatory machine type. An optional machine type
// only ranks clusters, so its pods are delivered as written. This is the one
// answer to the question: the workload check (a pod label that would keep the
// pods from being guests), the delivered pod template (GuestLabels) and the
// delivered namespace (opted in to the managed cluster's injector) all read it.
func (c *Consumer) MachineGuest() bool { return c.MachineType != nil }

// GuestLabels returns the labels the consumer's pod template is delivered
// with when its pods are guests of a machine group (see MachineGuest),
// naming its container as the one the injector gives the machine to; nil
// when they are not guests.
func (c *Consumer) GuestLabels() map[string]string {
	if !c.MachineGuest() {
		return nil
	}
	return machinegroup.GuestLabels(c.MachineType.Group, c.MachineType.Name, c.Target.Container)
}

// OptionalRequirement is one optional requirement: a cluster that can meet it
// scores in proportion to Weight. Exactly one of Requests, Feature or
// MachineType is set.
type OptionalRequirement struct {
	Name string
	// Weight is 1..10.
	Weight int32
	// Requests holds the one resource's per-replica request and Limits its
	// limit when set; both nil for a feature.
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
	// Feature is the node label requirement; nil for a resource.
	Feature *corev1.NodeSelectorRequirement
	// MachineType is the machine type a cluster scores for when it has a
	// free machine of it for every replica; nil for the other kinds.
	MachineType *v1alpha1.MachineTypeRequirement
	// Request is one replica of the consumer's whole pod with this
	// requirement met as well, as a fit query: the other containers of the
	// pod keep their mandatory requirements. Compile sets it; it is nil in
	// what Resolve returns.
	Request *inventory.Request
}

// Resolve resolves an intent. On error it returns nil and an error joining
// one *Problem per thing to fix (see Problems and ReasonOf). It checks in
// four stages and stops after the first that finds problems, since later
// stages would only repeat them: the spec as the CRD checks it at admission
// (for intents that never went through it, such as a CLI's files), then each
// consumer's requirements (amounts in Kubernetes units, exclusiveCPU after
// conversion), then, when the intent carries manifests, every consumer
// against the workload, and last the pods the consumers form (see Pod:
// agreeing replicas, a machine type only beside features).
func Resolve(intent *v1alpha1.HPAIntent) (*Resolved, error) {
	if intent == nil {
		return nil, &Problem{Reason: ReasonInvalidRequirements, Message: "no HPAIntent to resolve"}
	}
	var ps problems
	for _, fe := range validation.ValidateHPAIntent(intent) {
		ps.add(ReasonInvalidRequirements, "", "%s", fe.Error())
	}
	if len(ps) > 0 {
		return nil, ps.err()
	}

	out := &Resolved{}
	for i := range intent.Spec.Consumers {
		c, cps := resolveConsumer(&intent.Spec.Consumers[i])
		ps = append(ps, cps...)
		out.Consumers = append(out.Consumers, c)
	}
	if len(ps) > 0 {
		return nil, ps.err()
	}
	if intent.Spec.Workload != nil && len(intent.Spec.Workload.Manifests) > 0 {
		var wps problems
		out.Manifests, wps = decodeManifests(intent.Spec.Workload.Manifests)
		if len(wps) == 0 {
			wps = bindWorkload(out)
		}
		if len(wps) > 0 {
			return nil, wps.err()
		}
	}
	for i := range out.Consumers {
		if out.Consumers[i].Replicas == replicasUnset {
			out.Consumers[i].Replicas = 1
		}
	}
	out.Pods, ps = groupPods(out)
	if len(ps) > 0 {
		return nil, ps.err()
	}
	if ps = addPodDevices(out); len(ps) > 0 {
		return nil, ps.err()
	}
	for k := range out.Pods {
		out.Pods[k].ScaleUp = intent.Spec.ScaleUp.Allows()
	}
	split, ps := resolveSplit(intent.Spec.Split, out.Pods)
	if len(ps) > 0 {
		return nil, ps.err()
	}
	if split != nil {
		out.Pods[0].Split = split
	}
	return out, nil
}

// replicasUnset marks a consumer whose replicas the spec leaves to the
// workload; the CRD's minimum of 1 keeps it apart from any spec value.
const replicasUnset int32 = -1

// resolveConsumer converts one consumer's requirements. Its replicas and
// manifest are settled later, by bindWorkload, when there is a workload.
func resolveConsumer(in *v1alpha1.ResourceConsumer) (Consumer, problems) {
	var ps problems
	c := Consumer{
		Name:         in.Name,
		Target:       in.Target,
		Manifest:     -1,
		Replicas:     replicasUnset,
		ExclusiveCPU: in.ExclusiveCPU,
		Requests:     corev1.ResourceList{},
		Limits:       corev1.ResourceList{},
	}
	if in.Replicas != nil {
		c.Replicas = *in.Replicas
	}
	for i := range in.Requirements {
		r := &in.Requirements[i]
		switch {
		case r.Resource != nil:
			name := corev1.ResourceName(r.Resource.Name)
			requests, limits, err := amounts(r.Resource)
			if err != nil {
				ps.add(ReasonInvalidRequirements, in.Name, "requirement %q: %v", r.Name, err)
				continue
			}
			if !r.IsMandatory() {
				o := OptionalRequirement{Name: r.Name, Weight: r.EffectiveWeight(), Requests: corev1.ResourceList{name: requests}}
				if limits != nil {
					o.Limits = corev1.ResourceList{name: *limits}
				}
				c.Optional = append(c.Optional, o)
				continue
			}
			// Validation refuses two mandatory amounts of one resource, so
			// each name is set once.
			c.Requests[name] = requests
			if limits != nil {
				c.Limits[name] = *limits
			}
		case r.Feature != nil:
			f := nodeSelectorRequirement(r.Feature)
			if r.IsMandatory() {
				c.Features = append(c.Features, f)
			} else {
				c.Optional = append(c.Optional, OptionalRequirement{Name: r.Name, Weight: r.EffectiveWeight(), Feature: &f})
			}
		case r.Devices != nil:
			// Validation keeps device requirements mandatory.
			c.Devices = append(c.Devices, deviceOf(r.Name, r.Devices))
		case r.MachineType != nil:
			m := *r.MachineType
			if r.IsMandatory() {
				// Validation allows one mandatory machine type per consumer.
				c.MachineType = &m
			} else {
				c.Optional = append(c.Optional, OptionalRequirement{Name: r.Name, Weight: r.EffectiveWeight(), MachineType: &m})
			}
		}
	}
	if c.ExclusiveCPU {
		ps = append(ps, checkExclusiveRequirements(&c)...)
	}
	return c, ps
}

// amounts returns the requests and limits of a resource in Kubernetes units.
func amounts(a *v1alpha1.ResourceAmount) (requests resource.Quantity, limits *resource.Quantity, err error) {
	requests, err = a.EffectiveRequests()
	if err != nil {
		return requests, nil, err
	}
	limits, err = a.EffectiveLimits()
	return requests, limits, err
}

// nodeSelectorRequirement expands EMCO's shorthand and the default operator.
func nodeSelectorRequirement(f *v1alpha1.FeatureRequirement) corev1.NodeSelectorRequirement {
	op := f.Operator
	if op == "" {
		op = corev1.NodeSelectorOpIn
	}
	out := corev1.NodeSelectorRequirement{Key: f.Key, Operator: op}
	switch {
	case f.Value != "":
		out.Values = []string{f.Value}
	case len(f.Values) > 0:
		out.Values = append([]string(nil), f.Values...)
	}
	return out
}

// checkExclusiveRequirements re-checks, after unit conversion, what the CRD
// checks as written: the consumer's own cpu and memory give Guaranteed QoS
// with whole cores. It only fails when the CRD and the conversion disagree,
// which would be a bug, but then the message still says what to fix.
func checkExclusiveRequirements(c *Consumer) problems {
	var ps problems
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if msg := guaranteed(c.Requests, c.Limits, name); msg != "" {
			ps.add(ReasonInvalidRequirements, c.Name, "exclusiveCPU needs Guaranteed QoS, but its %s; set a mandatory %s requirement with requests equal to limits", msg, name)
		}
	}
	if cpu, ok := c.Requests[corev1.ResourceCPU]; ok && cpu.MilliValue()%1000 != 0 {
		ps.add(ReasonInvalidRequirements, c.Name, "exclusiveCPU needs whole cores, but cpu is %s; use an integer such as %d", cpu.String(), cpu.MilliValue()/1000+1)
	}
	return ps
}

// guaranteed describes why a container with these requests and limits does
// not count as Guaranteed for one resource, or returns "" when it does.
func guaranteed(requests, limits corev1.ResourceList, name corev1.ResourceName) string {
	l, hasLimit := limits[name]
	r, hasRequest := requests[name]
	switch {
	case !hasLimit:
		return fmt.Sprintf("%s has no limits", name)
	case hasRequest && r.Cmp(l) != 0:
		return fmt.Sprintf("%s requests %s differ from limits %s", name, r.String(), l.String())
	}
	return ""
}
