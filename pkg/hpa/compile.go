package hpa

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// Intent is one generation of an HPAIntent in the form everything
// downstream reads: the resolved consumers, each with its fit queries
// (Consumer.Request, OptionalRequirement.Request), and the decoded workload.
// It is built once per UID and generation (the scheduler's cache holds it)
// and never modified afterwards, so any number of cycles and controllers may
// read it at once. It shares nothing with the object it came from.
type Intent struct {
	Namespace, Name string
	// UID and Generation identify what it was compiled from; both are empty
	// for an object that is not stored, such as one posted to the dry run.
	UID        types.UID
	Generation int64
	Resolved
}

// Compile resolves an intent (see Resolve, whose errors it returns as they
// are) and compiles every consumer's requirements into fit queries.
func Compile(in *v1alpha1.HPAIntent) (*Intent, error) {
	r, err := Resolve(in)
	if err != nil {
		return nil, err
	}
	out := &Intent{Namespace: in.Namespace, Name: in.Name, UID: in.UID, Generation: in.Generation, Resolved: *r}
	for i := range out.Consumers {
		c := &out.Consumers[i]
		c.Intent = in.Name
		if c.MachineType != nil {
			c.Request, err = inventory.NewMachineRequest(machineType(c.MachineType), c.Features)
		} else {
			c.Request, err = inventory.NewRequest(c.Requests, c.Features, out.Tolerations(c))
		}
		if err != nil {
			return nil, fmt.Errorf("consumer %q: %w", c.Name, err)
		}
	}
	for k := range out.Pods {
		p := &out.Pods[k]
		if len(p.Consumers) == 1 {
			p.Request, p.What = p.Consumers[0].Request, "consumer "+in.Name+"/"+p.Name
		} else if p.Request, err = out.podRequest(p, nil, nil, nil, nil); err != nil {
			return nil, fmt.Errorf("consumers %q: %w", p.Name, err)
		} else {
			p.What = "consumers " + in.Name + "/" + p.Name
		}
		if p.Request, err = p.withDevices(p.Request); err != nil {
			return nil, err
		}
		for _, c := range p.Consumers {
			for k := range c.Optional {
				o := &c.Optional[k]
				if o.Request, err = compileOptional(&out.Resolved, p, c, o); err != nil {
					return nil, fmt.Errorf("consumer %q, optional requirement %q: %w", c.Name, o.Name, err)
				}
				if o.Request, err = p.withDevices(o.Request); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// compileOptional is one replica of c's pod with o met as well: o's amount
// replaces c's mandatory amount of the same resource, and o's feature joins
// the mandatory ones, as the delivered pod will have them (pkg/mutation); the
// pod's other containers keep their mandatory requirements. An optional
// machine type is a machine of that type for the replica, with the pod's
// mandatory features; an optional feature of a pod that takes a machine type
// is a machine of that type on a node with the feature.
func compileOptional(r *Resolved, p *Pod, c *Consumer, o *OptionalRequirement) (*inventory.Request, error) {
	var requests corev1.ResourceList
	if len(o.Requests) > 0 {
		requests = c.Requests.DeepCopy()
		for name, q := range o.Requests {
			requests[name] = q
		}
	}
	// A pod that meets an optional amount requests it, so it also tolerates that
	// resource's taint, such as nvidia.com/gpu:NoSchedule on GPU nodes (podRequest
	// adds the tolerations of the summed requests).
	return r.podRequest(p, c, requests, o.Feature, o.MachineType)
}

// machineType is the inventory's name for a machine type requirement.
func machineType(m *v1alpha1.MachineTypeRequirement) inventory.MachineType {
	return inventory.MachineType{Group: m.Group, Name: m.Name}
}

// Amounts is what the consumer's replicas request in all: requests ×
// replicas, per resource, without zero amounts. A consumer that takes a
// machine type counts its replicas as machines of the type's pseudo resource
// (inventory.MachineResourceName), which reservations compare with the
// cluster's machines in use (see framework.RequestedTotals).
func (c *Consumer) Amounts() corev1.ResourceList {
	out := corev1.ResourceList{}
	c.addAmounts(out)
	return out
}

// Amounts is what all the intent's consumers request in all.
func (in *Intent) Amounts() corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range in.Consumers {
		in.Consumers[i].addAmounts(out)
	}
	for k := range in.Pods {
		p := &in.Pods[k]
		addDevices(out, p.Devices, p.Replicas)
	}
	return out
}

// addDevices adds the devices of n replicas to out, as the pseudo resource
// inventory.DevicesInUseName.
func addDevices(out corev1.ResourceList, devices []Device, n int32) {
	var count int64
	for _, d := range devices {
		count += d.Count
	}
	if count == 0 || n <= 0 {
		return
	}
	sum := out[inventory.DevicesInUseName]
	sum.Add(*resource.NewQuantity(count*int64(n), resource.DecimalSI))
	out[inventory.DevicesInUseName] = sum
}

func (c *Consumer) addAmounts(out corev1.ResourceList) {
	if c.Replicas <= 0 {
		return
	}
	if c.MachineType != nil {
		name := inventory.MachineResourceName(machineType(c.MachineType))
		sum := out[name]
		sum.Add(*resource.NewQuantity(int64(c.Replicas), resource.DecimalSI))
		out[name] = sum
	}
	for name, q := range c.Requests {
		if q.IsZero() {
			continue
		}
		total := q.DeepCopy()
		total.Mul(int64(c.Replicas))
		sum := out[name]
		sum.Add(total)
		out[name] = sum
	}
}

// MeetsOptional reports whether a cluster's nodes can host every replica of
// the consumer with the optional requirement o met as well (at least one
// replica for a consumer of none); for a machine type, whether the cluster
// has a free machine of that type for every replica. The scheduler scores what it meets, and
// delivery applies what it meets.
func (c *Consumer) MeetsOptional(v *inventory.View, o *OptionalRequirement) bool {
	if v == nil || o.Request == nil {
		return false
	}
	n, _ := v.MaxReplicas(o.Request)
	return n >= max(int64(c.Replicas), 1)
}
