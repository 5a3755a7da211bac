package inventory

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory/devicecel"
)

// DefaultIgnoredDeviceAttributes are attribute names that tell one device
// from another rather than describe it: drivers publish a UUID, an index or
// a bus address per device. Kinds leave them out, so that a node with eight
// alike GPUs reports one kind with a count of eight. Names match an
// attribute with or without its domain.
var DefaultIgnoredDeviceAttributes = []string{
	"uuid", "index", "minor", "serial", "serialNumber", "pciBusID", "pcieBusID",
	"pciAddress", "resource.kubernetes.io/pcieRoot",
}

// DeviceInput is what the agent reads of a cluster's Dynamic Resource
// Allocation objects.
type DeviceInput struct {
	Slices  []*resourcev1.ResourceSlice
	Classes []*resourcev1.DeviceClass
	Claims  []*resourcev1.ResourceClaim
	// IgnoredAttributes are left out of kinds; nil means
	// DefaultIgnoredDeviceAttributes.
	IgnoredAttributes []string
}

// NodeDevices are one node's devices, counted per kind (a Vector whose names
// are kind names, one device being 1000 milli), and the extended resources
// of its allocatable that are the same hardware as its devices, which the
// node then does not count.
type NodeDevices struct {
	Capacity Vector
	Used     Vector
	Hidden   []corev1.ResourceName
}

func (d *NodeDevices) equal(o *NodeDevices) bool {
	if d == nil || o == nil {
		return d == o
	}
	return d.Capacity.Equal(o.Capacity) && d.Used.Equal(o.Used) && slices.Equal(d.Hidden, o.Hidden)
}

// DeviceSummary is SummarizeDevices' answer: the devices of each node, and
// the kinds to report.
type DeviceSummary struct {
	Nodes  map[string]*NodeDevices
	Report v1alpha1.ReportedDevices
}

// deviceID names one published device.
type deviceID struct{ driver, pool, device string }

// kindOf is a kind with the devices of it seen.
type kindOf struct {
	kind    v1alpha1.DeviceKind
	devices int
}

// SummarizeDevices groups the devices of complete pools, bound to one node,
// into kinds: same driver, attributes (but ignored ones), capacities and the
// DeviceClasses whose selectors they pass. It counts them per node, with the
// devices allocated by ResourceClaims as used, keeps at most
// v1alpha1.MaxReportedDeviceKinds kinds (those with the most devices), and
// says what it left out.
//
// A pool is complete, as kube-scheduler sees it, when its slices of the
// newest generation number resourceSliceCount; an incomplete pool, devices
// that several claims may share (allowMultipleAllocations, consumed
// counters), and devices not bound to one node are left out.
//
// When a node publishes devices of a class that names an
// extendedResourceName, the node's allocatable of that resource is the same
// hardware seen through a device plugin: the node counts the devices, not
// the extended resource (Hidden).
func SummarizeDevices(in DeviceInput) DeviceSummary {
	ignored := in.IgnoredAttributes
	if ignored == nil {
		ignored = DefaultIgnoredDeviceAttributes
	}
	classes := compileClasses(in.Classes)

	type pool struct {
		generation int64
		slices     []*resourcev1.ResourceSlice
		count      int64
	}
	pools := map[[2]string]*pool{}
	for _, s := range in.Slices {
		key := [2]string{s.Spec.Driver, s.Spec.Pool.Name}
		p := pools[key]
		switch {
		case p == nil:
			p = &pool{generation: s.Spec.Pool.Generation}
			pools[key] = p
		case s.Spec.Pool.Generation < p.generation:
			continue
		case s.Spec.Pool.Generation > p.generation:
			*p = pool{generation: s.Spec.Pool.Generation}
		}
		p.slices = append(p.slices, s)
		p.count = s.Spec.Pool.ResourceSliceCount
	}

	var (
		omitted    int
		incomplete int
		shared     int
		unbound    int
		kinds      = map[string]*kindOf{}
		kindCache  = map[string]string{} // description → kind name
		deviceKind = map[deviceID]struct{ node, kind string }{}
		perNode    = map[string]map[string]int64{}
		hidden     = map[string]map[corev1.ResourceName]bool{}
	)
	keys := slices.SortedFunc(maps.Keys(pools), func(a, b [2]string) int {
		return cmp.Or(strings.Compare(a[0], b[0]), strings.Compare(a[1], b[1]))
	})
	for _, key := range keys {
		p := pools[key]
		if int64(len(p.slices)) != p.count {
			incomplete++
			for _, s := range p.slices {
				omitted += len(s.Spec.Devices)
			}
			continue
		}
		for _, s := range p.slices {
			node := ""
			if s.Spec.NodeName != nil {
				node = *s.Spec.NodeName
			}
			for i := range s.Spec.Devices {
				d := &s.Spec.Devices[i]
				switch {
				case node == "":
					unbound++
					omitted++
					continue
				case (d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations) || len(d.ConsumesCounters) > 0:
					shared++
					omitted++
					continue
				}
				attrs := withoutIgnored(d.Attributes, s.Spec.Driver, ignored)
				desc := describeDevice(s.Spec.Driver, attrs, d.Capacity)
				name, ok := kindCache[desc]
				if !ok {
					dev := devicecel.Device{Driver: s.Spec.Driver, Attributes: attrs, Capacity: d.Capacity}
					kind := v1alpha1.DeviceKind{
						Driver:     s.Spec.Driver,
						Classes:    classes.of(dev),
						Attributes: attrs,
						Capacity:   maps.Clone(d.Capacity),
					}
					kind.Name = DeviceKindName(&kind)
					name = kind.Name
					kindCache[desc] = name
					if _, seen := kinds[name]; !seen {
						kinds[name] = &kindOf{kind: kind}
					}
				}
				k := kinds[name]
				k.devices++
				if perNode[node] == nil {
					perNode[node] = map[string]int64{}
				}
				perNode[node][name]++
				deviceKind[deviceID{s.Spec.Driver, s.Spec.Pool.Name, d.Name}] = struct{ node, kind string }{node, name}
				for _, c := range k.kind.Classes {
					if r := classes.extended[c]; r != "" {
						if hidden[node] == nil {
							hidden[node] = map[corev1.ResourceName]bool{}
						}
						hidden[node][r] = true
					}
				}
			}
		}
	}

	// Keep the kinds with the most devices.
	order := slices.Collect(maps.Keys(kinds))
	slices.SortFunc(order, func(a, b string) int {
		return cmp.Or(cmp.Compare(kinds[b].devices, kinds[a].devices), strings.Compare(a, b))
	})
	kept := map[string]bool{}
	for i, name := range order {
		if i < v1alpha1.MaxReportedDeviceKinds {
			kept[name] = true
			continue
		}
		omitted += kinds[name].devices
	}

	used := map[string]map[string]int64{}
	counted := map[deviceID]bool{}
	for _, c := range in.Claims {
		if c.Status.Allocation == nil {
			continue
		}
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.AdminAccess != nil && *r.AdminAccess {
				continue
			}
			id := deviceID{r.Driver, r.Pool, r.Device}
			where, ok := deviceKind[id]
			if !ok || counted[id] || !kept[where.kind] {
				continue
			}
			counted[id] = true
			if used[where.node] == nil {
				used[where.node] = map[string]int64{}
			}
			used[where.node][where.kind]++
		}
	}

	sum := DeviceSummary{Nodes: make(map[string]*NodeDevices, len(perNode))}
	for node, counts := range perNode {
		nd := &NodeDevices{Capacity: countVector(counts, kept), Used: countVector(used[node], kept)}
		for r := range hidden[node] {
			nd.Hidden = append(nd.Hidden, r)
		}
		slices.Sort(nd.Hidden)
		if len(nd.Capacity) > 0 {
			sum.Nodes[node] = nd
		}
	}
	rep := &sum.Report
	rep.Served = true
	for _, name := range order {
		if kept[name] {
			rep.Kinds = append(rep.Kinds, kinds[name].kind)
		}
	}
	slices.SortFunc(rep.Kinds, func(a, b v1alpha1.DeviceKind) int { return strings.Compare(a.Name, b.Name) })
	rep.IgnoredAttributes = slices.Sorted(slices.Values(ignored))
	if len(rep.IgnoredAttributes) > 32 {
		rep.IgnoredAttributes = rep.IgnoredAttributes[:32]
	}
	rep.OmittedDevices = int32Count(omitted)
	var why []string
	if n := len(order) - len(kept); n > 0 {
		why = append(why, fmt.Sprintf("%d kinds beyond the first %d", n, v1alpha1.MaxReportedDeviceKinds))
	}
	if incomplete > 0 {
		why = append(why, fmt.Sprintf("%d incomplete pools", incomplete))
	}
	if shared > 0 {
		why = append(why, fmt.Sprintf("%d shared devices (allowMultipleAllocations or consumed counters)", shared))
	}
	if unbound > 0 {
		why = append(why, fmt.Sprintf("%d devices not bound to one node", unbound))
	}
	if len(why) > 0 {
		rep.Message = "left out: " + strings.Join(why, ", ")
	}
	return sum
}

func countVector(counts map[string]int64, kept map[string]bool) Vector {
	var v Vector
	for name, n := range counts {
		if kept[name] && n > 0 {
			v = append(v, Amount{Name: corev1.ResourceName(name), Milli: n * 1000})
		}
	}
	sortAmounts(v)
	return v
}

// withoutIgnored copies attrs without the ignored names; an ignored name
// without a domain matches the attribute in any domain.
func withoutIgnored(attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, driver string, ignored []string) map[resourcev1.QualifiedName]resourcev1.DeviceAttribute {
	out := make(map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, len(attrs))
	for name, a := range attrs {
		id := string(name)
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			id = id[i+1:]
		}
		if slices.Contains(ignored, string(name)) || slices.Contains(ignored, id) {
			continue
		}
		out[name] = a
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// describeDevice encodes what makes a device's kind, classes aside: JSON
// writes maps sorted by key.
func describeDevice(driver string, attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, capacity map[resourcev1.QualifiedName]resourcev1.DeviceCapacity) string {
	b, _ := json.Marshal(struct {
		D string                                                  `json:"d"`
		A map[resourcev1.QualifiedName]resourcev1.DeviceAttribute `json:"a,omitempty"`
		C map[resourcev1.QualifiedName]string                     `json:"c,omitempty"`
	}{driver, attrs, capacityText(capacity)})
	return string(b)
}

// capacityText writes capacities canonically, so 1Gi and 1024Mi are one.
func capacityText(capacity map[resourcev1.QualifiedName]resourcev1.DeviceCapacity) map[resourcev1.QualifiedName]string {
	if len(capacity) == 0 {
		return nil
	}
	out := make(map[resourcev1.QualifiedName]string, len(capacity))
	for name, c := range capacity {
		v := c.Value
		out[name] = v.AsDec().String()
	}
	return out
}

// DeviceKindName derives a kind's name from what its devices share, so alike
// devices have the same name on every cluster, and the hub can check a name
// against its kind.
func DeviceKindName(k *v1alpha1.DeviceKind) string {
	h := sha256.New()
	h.Write([]byte(describeDevice(k.Driver, k.Attributes, k.Capacity)))
	for _, c := range k.Classes {
		h.Write([]byte{0})
		h.Write([]byte(c))
	}
	label := k.Driver
	if i := strings.IndexByte(label, '.'); i > 0 {
		label = label[:i]
	}
	label = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, strings.ToLower(label))
	if len(label) > 40 {
		label = label[:40]
	}
	label = strings.Trim(label, "-")
	if label == "" {
		label = "device"
	}
	return v1alpha1.DeviceResourcePrefix + label + "-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// IsDeviceResource reports whether name counts devices of a kind.
func IsDeviceResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1alpha1.DeviceResourcePrefix)
}

// deviceClasses are a cluster's DeviceClasses, compiled.
type deviceClasses struct {
	names    []string
	programs [][]*devicecel.Program // nil entry: a selector failed to compile
	valid    []bool
	// extended maps a class to its extendedResourceName.
	extended map[string]corev1.ResourceName
}

func compileClasses(classes []*resourcev1.DeviceClass) *deviceClasses {
	sorted := slices.Clone(classes)
	slices.SortFunc(sorted, func(a, b *resourcev1.DeviceClass) int { return strings.Compare(a.Name, b.Name) })
	out := &deviceClasses{extended: map[string]corev1.ResourceName{}}
	for _, c := range sorted {
		valid := true
		var progs []*devicecel.Program
		for _, s := range c.Spec.Selectors {
			if s.CEL == nil {
				continue
			}
			p, err := devicecel.Compile(s.CEL.Expression)
			if err != nil {
				valid = false
				break
			}
			progs = append(progs, p)
		}
		out.names = append(out.names, c.Name)
		out.programs = append(out.programs, progs)
		out.valid = append(out.valid, valid)
		if c.Spec.ExtendedResourceName != nil && *c.Spec.ExtendedResourceName != "" {
			out.extended[c.Name] = corev1.ResourceName(*c.Spec.ExtendedResourceName)
		}
	}
	return out
}

// of returns the classes whose every selector d passes, at most
// MaxDeviceKindClasses, sorted. A class whose selector does not compile, or
// fails on d, does not select it, as for kube-scheduler.
func (c *deviceClasses) of(d devicecel.Device) []string {
	var out []string
	for i, name := range c.names {
		if !c.valid[i] {
			continue
		}
		ok := true
		for _, p := range c.programs[i] {
			if m, err := p.Matches(d); err != nil || !m {
				ok = false
				break
			}
		}
		if ok && len(out) < v1alpha1.MaxDeviceKindClasses {
			out = append(out, name)
		}
	}
	return out
}

// DevicesInUseName is the pseudo resource that counts a cluster's allocated
// DRA devices, of every kind, in a reservation's amounts and in the cluster's
// requested totals: an intent's devices are of whichever kinds match on each
// cluster, so a reservation of devices is seen through their sum. It never
// names a real resource, so it is never asked of a node.
const DevicesInUseName corev1.ResourceName = "fleetfit.io/dra-devices-in-use"

// DevicesInUse sets DevicesInUseName in out to the devices in use the status
// reports, in milli-units.
func DevicesInUse(st *v1alpha1.ClusterInventoryStatus, out map[corev1.ResourceName]int64) {
	var sum int64
	for _, r := range st.Resources {
		if IsDeviceResource(r.Name) {
			sum += MilliOf(r.Requested)
		}
	}
	if sum > 0 {
		out[DevicesInUseName] = sum
	}
}
