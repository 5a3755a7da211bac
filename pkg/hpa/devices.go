package hpa

import (
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// Device is one device request of a pod: a device requirement of one of its
// consumers, or a request of a ResourceClaimTemplate the workload carries
// and its pod template claims.
type Device struct {
	// Name is the requirement's name, or "<claim>/<request>" for a request
	// of the workload's own template.
	Name      string
	Class     string
	Count     int64
	Selectors []string
	// FromWorkload is set for the workload's own requests: the workload is
	// delivered as written, with no claim of fleetfit's.
	FromWorkload bool
}

// deviceOf converts a device requirement.
func deviceOf(name string, d *v1alpha1.DeviceRequirement) Device {
	out := Device{Name: name, Class: d.DeviceClassName, Count: int64(d.CountOrDefault())}
	for _, s := range d.Selectors {
		if s.CEL != nil {
			out.Selectors = append(out.Selectors, s.CEL.Expression)
		}
	}
	return out
}

// ResourceClaimTemplateKind is the kind of the DRA objects a workload may
// carry for its pods' claims.
const ResourceClaimTemplateKind = "ResourceClaimTemplate"

// workloadDevices reads the device requests of the templates the pod
// template of manifest idx claims: a claim names a ResourceClaimTemplate
// among the manifests. A claim of an existing ResourceClaim (shared by pods)
// or of a template the workload does not carry is not counted; allocation
// mode All and prioritized lists (firstAvailable) cannot be counted ahead
// and are refused.
func workloadDevices(r *Resolved, idx int) ([]Device, problems) {
	var ps problems
	spec, msg := podSpecOf(r.Manifests[idx])
	if msg != "" {
		return nil, nil
	}
	var out []Device
	for _, pc := range spec.ResourceClaims {
		if pc.ResourceClaimTemplateName == nil {
			continue
		}
		tmpl := findClaimTemplate(r, *pc.ResourceClaimTemplateName)
		if tmpl == nil {
			continue
		}
		for _, req := range tmpl.Spec.Spec.Devices.Requests {
			name := pc.Name + "/" + req.Name
			ex := req.Exactly
			if ex == nil {
				ps.add(ReasonInvalidWorkload, "", "ResourceClaimTemplate %s, request %q: a list of alternatives (firstAvailable) cannot be counted ahead; ask for one device class (exactly)", tmpl.Name, req.Name)
				continue
			}
			d := Device{Name: name, Class: ex.DeviceClassName, Count: 1, FromWorkload: true}
			switch ex.AllocationMode {
			case "", resourcev1.DeviceAllocationModeExactCount:
				if ex.Count > 0 {
					d.Count = ex.Count
				}
			default:
				ps.add(ReasonInvalidWorkload, "", "ResourceClaimTemplate %s, request %q: allocationMode %s takes every matching device of a node, which cannot be counted ahead; use ExactCount with a count", tmpl.Name, req.Name, ex.AllocationMode)
				continue
			}
			for _, s := range ex.Selectors {
				if s.CEL != nil {
					d.Selectors = append(d.Selectors, s.CEL.Expression)
				}
			}
			out = append(out, d)
		}
	}
	return out, ps
}

func findClaimTemplate(r *Resolved, name string) *resourcev1.ResourceClaimTemplate {
	for _, u := range r.Manifests {
		if u.GetKind() != ResourceClaimTemplateKind || u.GetName() != name {
			continue
		}
		t := &resourcev1.ResourceClaimTemplate{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, t); err != nil {
			return nil
		}
		return t
	}
	return nil
}

// addPodDevices sets every pod's Devices: its consumers' device requirements
// and, for a pod of the workload, the requests of the templates it claims.
func addPodDevices(r *Resolved) problems {
	var ps problems
	for k := range r.Pods {
		p := &r.Pods[k]
		for _, c := range p.Consumers {
			p.Devices = append(p.Devices, c.Devices...)
		}
		if c := p.firstConsumer(); c != nil && c.Manifest >= 0 {
			d, dps := workloadDevices(r, c.Manifest)
			ps = append(ps, dps...)
			p.Devices = append(p.Devices, d...)
		}
		if len(p.Devices) > maxPodDevices {
			ps.add(ReasonInvalidRequirements, "", "pod %s asks for devices in %d requests; fleetfit counts at most %d per pod", p.Name, len(p.Devices), maxPodDevices)
		}
		if len(p.Devices) > 0 && slices.ContainsFunc(p.Consumers, func(c *Consumer) bool { return takesMachine(c) }) {
			ps.add(ReasonInvalidRequirements, "", "pod %s takes a machine type and asks for devices; a machine's guest gets the machine's resources only: drop one of them", p.Name)
		}
	}
	return ps
}

// maxPodDevices bounds the device requests of one pod.
const maxPodDevices = 8

// withDevices adds the pod's device requests to req.
func (p *Pod) withDevices(req *inventory.Request) (*inventory.Request, error) {
	if len(p.Devices) == 0 || req == nil {
		return req, nil
	}
	ds := make([]*inventory.DeviceRequest, 0, len(p.Devices))
	for _, d := range p.Devices {
		dr, err := inventory.NewDeviceRequest(d.Name, d.Class, d.Count, d.Selectors)
		if err != nil {
			return nil, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		ds = append(ds, dr)
	}
	return req.WithDevices(ds...), nil
}
