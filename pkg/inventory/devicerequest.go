package inventory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory/devicecel"
)

// DeviceRequest asks, per replica, for Count devices of a DeviceClass that
// pass every selector, as one request of a ResourceClaim does. A View
// matches it against the kinds its cluster reports: a kind matches when the
// class is among its classes and every selector is true on its attributes
// and capacities, evaluated as kube-scheduler evaluates them. A selector that
// fails on a kind (an attribute the kind lacks) does not match it.
//
// All of a replica's devices of one request are taken from one kind on one
// node: a node with devices of two matching kinds offers the larger count
// of one, never their sum, so fit may under-count such a node, never
// over-count it. View.MaxReplicas and FitsOnOneNode also take the kinds of
// all replicas on one node alike; an Allocation chooses per replica.
type DeviceRequest struct {
	Name      string
	Class     string
	Count     int64
	selectors []*devicecel.Program

	// matches remembers, per kind name, whether the kind matches: kind names
	// derive from their content (the View checks), so one answer holds on
	// every cluster.
	matches sync.Map // corev1.ResourceName → kindMatch
}

type kindMatch struct {
	ok  bool
	err string // why a selector failed on the kind
}

// NewDeviceRequest compiles a device request.
func NewDeviceRequest(name, class string, count int64, selectors []string) (*DeviceRequest, error) {
	if count < 1 {
		return nil, fmt.Errorf("device request %s: count must be at least 1", name)
	}
	d := &DeviceRequest{Name: name, Class: class, Count: count}
	for _, s := range selectors {
		p, err := devicecel.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("device request %s: selector %q: %w", name, s, err)
		}
		d.selectors = append(d.selectors, p)
	}
	return d, nil
}

// String describes the request as reasons quote it.
func (d *DeviceRequest) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s of class %s", d.Count, plural(d.Count, "device", "devices"), d.Class)
	for i, p := range d.selectors {
		if i == 0 {
			b.WriteString(" with ")
		} else {
			b.WriteString(" && ")
		}
		b.WriteString(p.Expression())
	}
	return b.String()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// match says whether kind k, named name, matches d.
func (d *DeviceRequest) match(name corev1.ResourceName, k *v1alpha1.DeviceKind) kindMatch {
	if m, ok := d.matches.Load(name); ok {
		return m.(kindMatch)
	}
	m := kindMatch{}
	for _, c := range k.Classes {
		if c == d.Class {
			m.ok = true
			break
		}
	}
	if m.ok {
		dev := devicecel.Device{Driver: k.Driver, Attributes: k.Attributes, Capacity: k.Capacity}
		for _, p := range d.selectors {
			ok, err := p.Matches(dev)
			if errors.Is(err, context.DeadlineExceeded) {
				// Out of time on a busy hub: no match now, but not remembered, since
				// another try may finish.
				return kindMatch{err: err.Error()}
			}
			if err != nil {
				m = kindMatch{err: err.Error()}
				break
			}
			if !ok {
				m.ok = false
				break
			}
		}
	}
	d.matches.Store(name, m)
	return m
}

// WithDevices returns a copy of r that also needs devices on the node of
// each replica.
func (r *Request) WithDevices(devices ...*DeviceRequest) *Request {
	out := *r
	out.devices = append(append([]*DeviceRequest(nil), r.devices...), devices...)
	return &out
}

// Devices returns the request's device requests.
func (r *Request) Devices() []*DeviceRequest { return r.devices }

// indexKinds reads the device kinds of st, keeping only those whose name
// is the one their content gives: a kind is input, and the hub shares what
// it learns of a kind by name across clusters.
func (v *View) indexKinds(st *v1alpha1.ClusterInventoryStatus) {
	if st.Devices == nil {
		return
	}
	for i := range st.Devices.Kinds {
		k := st.Devices.Kinds[i].DeepCopy()
		if len(k.Attributes)+len(k.Capacity) > 2*v1alpha1.MaxDeviceKindAttributes || len(k.Classes) > v1alpha1.MaxDeviceKindClasses {
			continue
		}
		if DeviceKindName(k) != k.Name {
			continue
		}
		if v.kinds == nil {
			v.kinds = map[corev1.ResourceName]*v1alpha1.DeviceKind{}
		}
		v.kinds[corev1.ResourceName(k.Name)] = k
	}
}

// DeviceKinds returns the kinds the cluster reports, by name; read-only.
func (v *View) DeviceKinds() map[corev1.ResourceName]*v1alpha1.DeviceKind { return v.kinds }

// maxAlternatives bounds the ways one shape's kinds can meet a request's
// device requests that are tried; more are left untried, which can only
// under-count.
const maxAlternatives = 16

// alternatives appends to out, for each way the shape's kinds can serve r's
// device requests (one kind per request), r's needs with those devices, and
// returns the needs' bounds in out. A request without devices has one
// alternative, its needs. A device request no kind of the shape matches
// gets a need that no node meets, named after the request.
func (s *viewShape) alternatives(out []need, bounds [][2]int, r *Request, v *View) ([]need, [][2]int) {
	if len(r.devices) == 0 {
		from := len(out)
		out = s.appendNeeds(out, r)
		return out, append(bounds, [2]int{from, len(out)})
	}
	options := make([][]int, len(r.devices))
	for i, d := range r.devices {
		for j, name := range s.names {
			if k := v.kinds[name]; k != nil && d.match(name, k).ok {
				options[i] = append(options[i], j)
			}
		}
	}
	choice := make([]int, len(r.devices))
	for n := 0; n < maxAlternatives; n++ {
		from := len(out)
		out = s.appendNeeds(out, r)
		for i, d := range r.devices {
			idx := -1
			label := d.String()
			var name corev1.ResourceName
			if len(options[i]) > 0 {
				idx = options[i][choice[i]]
				name = s.names[idx]
			}
			merged := false
			if idx >= 0 {
				for k := from; k < len(out); k++ {
					if out[k].index == idx {
						out[k].milli += d.Count * 1000
						if out[k].label == "" {
							// A resource of the pod's own of that name, which no agent reports.
							out[k].label = string(out[k].name)
						}
						out[k].label += " and " + label
						merged = true
						break
					}
				}
			}
			if !merged {
				out = append(out, need{name: name, milli: d.Count * 1000, index: idx, label: label})
			}
		}
		bounds = append(bounds, [2]int{from, len(out)})
		// The next choice, as an odometer.
		i := 0
		for ; i < len(choice); i++ {
			if choice[i]+1 < len(options[i]) {
				choice[i]++
				break
			}
			choice[i] = 0
		}
		if i == len(choice) {
			break
		}
	}
	return out, bounds
}
