package mutation

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/hpa"
)

// ForConsumer returns the mutation that delivers consumer c of r to a cluster
// that meets the optional requirements named in optional: the mandatory
// amounts and features, plus those of the named optional requirements, and
// the tolerations the pods then need (r.Tolerations of the consumer with those
// requests). An optional amount replaces a mandatory amount of the same
// resource, as the scheduler assumed when it checked the cluster. A consumer
// whose pods are guests of a machine group (hpa.Consumer.MachineGuest: a
// mandatory machine type) gets no amounts but c.GuestLabels, which name c's
// container as the injecting one; its features still become node affinity. An optional machine type
// changes nothing here: it only ranks clusters, and the pods of a consumer
// without a mandatory one are not guests. A name c has no optional
// requirement by is an error. The mutation shares nothing with r.
func ForConsumer(r *hpa.Resolved, c *hpa.Consumer, optional []string) (Mutation, error) {
	m := Mutation{
		Container:    c.Target.Container,
		Requests:     c.Requests.DeepCopy(),
		Limits:       c.Limits.DeepCopy(),
		ExclusiveCPU: c.ExclusiveCPU,
		Features:     deepCopyRequirements(c.Features),
	}
	if m.Requests == nil {
		m.Requests = corev1.ResourceList{}
	}
	if m.Limits == nil {
		m.Limits = corev1.ResourceList{}
	}
	// Apply them in spec order, whatever the order of the names.
	applied := map[string]bool{}
	for _, name := range optional {
		applied[name] = true
	}
	for i := range c.Optional {
		o := &c.Optional[i]
		if !applied[o.Name] {
			continue
		}
		delete(applied, o.Name)
		for name, q := range o.Requests {
			m.Requests[name] = q.DeepCopy()
			if _, ok := o.Limits[name]; !ok {
				// The mandatory limit was for the mandatory amount.
				delete(m.Limits, name)
			}
		}
		for name, q := range o.Limits {
			m.Limits[name] = q.DeepCopy()
		}
		if o.Feature != nil {
			m.Features = append(m.Features, *o.Feature.DeepCopy())
		}
	}
	if len(applied) > 0 {
		unknown := make([]string, 0, len(applied))
		for name := range applied {
			unknown = append(unknown, fmt.Sprintf("%q", name))
		}
		slices.Sort(unknown)
		known := make([]string, 0, len(c.Optional))
		for i := range c.Optional {
			known = append(known, fmt.Sprintf("%q", c.Optional[i].Name))
		}
		return Mutation{}, fmt.Errorf("consumer %q has no optional requirement %s (optional requirements: %s)",
			c.Name, strings.Join(unknown, ", "), orNone(known))
	}
	if c.MachineGuest() {
		// The managed cluster's injector gives the guest's container the
		// type's amounts (requests equal to limits), its node affinity and
		// tolerations; validation leaves such a consumer no amounts of its
		// own, and none are delivered.
		m.Requests, m.Limits, m.ExclusiveCPU = corev1.ResourceList{}, corev1.ResourceList{}, false
		m.Labels = c.GuestLabels()
	}
	withOptional := *c
	withOptional.Requests = m.Requests
	m.Tolerations = r.Tolerations(&withOptional)
	return m, nil
}

func deepCopyRequirements(in []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	if in == nil {
		return nil
	}
	out := make([]corev1.NodeSelectorRequirement, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
