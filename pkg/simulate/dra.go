package simulate

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/inventory/devicecel"
)

// Dynamic Resource Allocation objects in a fleet file: a cluster given by its Nodes may come
// with its ResourceSlices, DeviceClasses and ResourceClaims, marked with the cluster like
// MachineGroups, and its inventory counts their devices as the agent does
// (inventory.SummarizeDevices). They are checked as the cluster's API server checks the
// fields fleetfit reads.

// devices are one cluster's DRA objects.
type devices struct {
	slices  []*resourcev1.ResourceSlice
	classes []*resourcev1.DeviceClass
	claims  []*resourcev1.ResourceClaim
}

// Bounds of the DRA API (resource.k8s.io/v1).
const (
	maxDevicesPerSlice   = 128
	maxAttributesPerItem = 32
	maxDriverNameLength  = 63
	maxPoolNameLength    = 253
	maxClassSelectors    = 32
)

func validateResourceSlice(s *resourcev1.ResourceSlice) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&s.ObjectMeta, false, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, validateDriverName(s.Spec.Driver, spec.Child("driver"))...)
	pool := spec.Child("pool")
	switch {
	case s.Spec.Pool.Name == "":
		errs = append(errs, field.Required(pool.Child("name"), ""))
	case len(s.Spec.Pool.Name) > maxPoolNameLength:
		errs = append(errs, field.TooLong(pool.Child("name"), "", maxPoolNameLength))
	}
	if s.Spec.Pool.ResourceSliceCount < 1 {
		errs = append(errs, field.Invalid(pool.Child("resourceSliceCount"), s.Spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if s.Spec.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(pool.Child("generation"), s.Spec.Pool.Generation, "must be greater than or equal to zero"))
	}
	set := 0
	if s.Spec.NodeName != nil {
		set++
		for _, msg := range validation.IsDNS1123Subdomain(*s.Spec.NodeName) {
			errs = append(errs, field.Invalid(spec.Child("nodeName"), *s.Spec.NodeName, msg))
		}
	}
	if s.Spec.NodeSelector != nil {
		set++
	}
	if s.Spec.AllNodes != nil && *s.Spec.AllNodes {
		set++
	}
	if s.Spec.PerDeviceNodeSelection != nil && *s.Spec.PerDeviceNodeSelection {
		set++
	}
	if set != 1 {
		errs = append(errs, field.Invalid(spec, "", "exactly one of nodeName, nodeSelector, allNodes or perDeviceNodeSelection is required"))
	}
	devs := spec.Child("devices")
	if len(s.Spec.Devices) > maxDevicesPerSlice {
		errs = append(errs, field.TooMany(devs, len(s.Spec.Devices), maxDevicesPerSlice))
	}
	names := sets.New[string]()
	for i, d := range s.Spec.Devices {
		p := devs.Index(i)
		for _, msg := range validation.IsDNS1123Label(d.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), d.Name, msg))
		}
		if names.Has(d.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), d.Name))
		}
		names.Insert(d.Name)
		if n := len(d.Attributes) + len(d.Capacity); n > maxAttributesPerItem {
			errs = append(errs, field.Invalid(p, n, fmt.Sprintf("the combined number of attributes and capacities must not exceed %d", maxAttributesPerItem)))
		}
		for name, a := range d.Attributes {
			values := 0
			for _, set := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil} {
				if set {
					values++
				}
			}
			if values != 1 {
				errs = append(errs, field.Invalid(p.Child("attributes").Key(string(name)), "", "exactly one value must be specified"))
			}
		}
	}
	return errs
}

func validateDeviceClass(c *resourcev1.DeviceClass) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&c.ObjectMeta, false, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	sel := field.NewPath("spec", "selectors")
	if len(c.Spec.Selectors) > maxClassSelectors {
		errs = append(errs, field.TooMany(sel, len(c.Spec.Selectors), maxClassSelectors))
	}
	for i, s := range c.Spec.Selectors {
		p := sel.Index(i).Child("cel")
		if s.CEL == nil {
			errs = append(errs, field.Required(p, ""))
			continue
		}
		if err := devicecel.Check(s.CEL.Expression); err != nil {
			errs = append(errs, field.Invalid(p.Child("expression"), s.CEL.Expression, err.Error()))
		}
	}
	return errs
}

func validateResourceClaim(c *resourcev1.ResourceClaim) field.ErrorList {
	errs := metavalidation.ValidateObjectMeta(&c.ObjectMeta, true, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	if c.Status.Allocation == nil {
		return errs
	}
	results := field.NewPath("status", "allocation", "devices", "results")
	for i, r := range c.Status.Allocation.Devices.Results {
		p := results.Index(i)
		errs = append(errs, validateDriverName(r.Driver, p.Child("driver"))...)
		if r.Pool == "" {
			errs = append(errs, field.Required(p.Child("pool"), ""))
		}
		for _, msg := range validation.IsDNS1123Label(r.Device) {
			errs = append(errs, field.Invalid(p.Child("device"), r.Device, msg))
		}
	}
	return errs
}

func validateDriverName(name string, p *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "")}
	case len(name) > maxDriverNameLength:
		return field.ErrorList{field.TooLong(p, "", maxDriverNameLength)}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p, name, msg))
	}
	return errs
}

// addDevices files a DRA object, a kind with m, under the cluster it is marked with.
func (f *Fleet) addDevices(kind string, m *metav1.ObjectMeta, obj any) error {
	cluster := marker(m)
	if cluster == "" {
		return fmt.Errorf("%s %q has no %s label or annotation: say which managed cluster it belongs to", kind, m.Name, ClusterLabel)
	}
	if f.Devices == nil {
		f.Devices = map[string]*devices{}
	}
	d := f.Devices[cluster]
	if d == nil {
		d = &devices{}
		f.Devices[cluster] = d
	}
	switch o := obj.(type) {
	case *resourcev1.ResourceSlice:
		d.slices = append(d.slices, o)
	case *resourcev1.DeviceClass:
		d.classes = append(d.classes, o)
	case *resourcev1.ResourceClaim:
		d.claims = append(d.claims, o)
	}
	return nil
}

// summary is the cluster's devices as its agent would report them.
func (d *devices) summary() inventory.DeviceSummary {
	return inventory.SummarizeDevices(inventory.DeviceInput{Slices: d.slices, Classes: d.classes, Claims: d.claims})
}
