package inventory

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Request is one replica of a pod-shaped request: resource amounts that must
// all be free on one node, and the Selector that node must pass. Zero
// amounts are no constraint. Each replica also takes one pod slot on nodes
// that report allocatable "pods" (all real nodes do), unless the request
// names a different number of "pods" itself. A machine request
// (NewMachineRequest) instead takes one free machine of a MachineGroup's type
// per replica, and no amounts. A Request is read-only once built.
type Request struct {
	sel     *Selector
	amounts Vector // without pods
	pods    int64  // pod slots per replica, in milli
	// machine is the machine type each replica takes; nil for amounts.
	machine *MachineType
	// devices are the DRA devices each replica takes on its node.
	devices []*DeviceRequest
}

// NewRequest compiles a request; see NewSelector for what it rejects, and
// negative amounts are rejected too.
func NewRequest(resources corev1.ResourceList, features []corev1.NodeSelectorRequirement, tolerations []corev1.Toleration) (*Request, error) {
	var errs []error
	for name, q := range resources {
		if q.Sign() < 0 {
			errs = append(errs, fmt.Errorf("negative amount of %s: %s", name, q.String()))
		}
	}
	sel, err := NewSelector(features, tolerations)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	r := &Request{sel: sel, pods: 1000}
	for _, a := range NewVector(resources) {
		if a.Name == corev1.ResourcePods {
			r.pods = a.Milli
			continue
		}
		r.amounts = append(r.amounts, a)
	}
	if q, ok := resources[corev1.ResourcePods]; ok && q.IsZero() {
		r.pods = 0
	}
	return r, nil
}

// Selector returns the request's node selector.
func (r *Request) Selector() *Selector { return r.sel }

// View is a read-only index over one ClusterInventoryStatus for answering
// fit questions. It copies what it needs, so later changes to the status do
// not affect it, and it is safe for concurrent use. Only schedulable shapes
// ever count as room.
type View struct {
	shapes []viewShape
	// reported selects the labels the cluster's agent reports; a Selector
	// on another key matches no node (see Unreported).
	reported labelFilter

	// machines are the machine types of the cluster's MachineGroups, sorted
	// by group and name, and machineGroups the groups' names, sorted.
	machines      []viewMachine
	machineGroups []string

	// kinds are the cluster's DRA device kinds, by name; node shapes count
	// their devices under these names.
	kinds map[corev1.ResourceName]*v1alpha1.DeviceKind

	// pools are the cluster's ready autoscaling pools, and poolShapes the
	// nodes they can add, as shapes that count only for an Allocation that
	// scales up (see pools.go); poolShapeInfo is indexed like poolShapes.
	pools         []viewPool
	poolShapes    []viewShape
	poolShapeInfo []poolShape

	// packingOnce guards packing, the scales Allocations use, computed on
	// the first Allocate so that views that are never allocated do not pay.
	packingOnce sync.Once
	packing     *packing
}

type viewShape struct {
	name        string
	schedulable bool
	truncated   bool
	labels      map[string]string
	taints      []corev1.Taint
	podSlots    bool // allocatable lists pods, so each replica takes one
	names       []corev1.ResourceName
	vectors     []viewVector // indexed like names
}

type viewVector struct {
	count int64
	free  []int64
}

// NewView indexes st without modifying it. Malformed entries are read
// conservatively: negative amounts count as zero and vectors with a count
// below one are ignored. A status without reportedLabels is taken to report
// LegacyReportedLabels.
func NewView(st *v1alpha1.ClusterInventoryStatus) *View {
	v := &View{shapes: make([]viewShape, 0, len(st.NodeShapes)), reported: reportedOf(st)}
	for i := range st.NodeShapes {
		ns := &st.NodeShapes[i]
		s := viewShape{
			name:        ns.Name,
			schedulable: ns.Schedulable,
			truncated:   ns.Truncated,
			labels:      maps.Clone(ns.Labels),
			taints:      slices.Clone(ns.Taints),
			podSlots:    MilliOf(ns.Allocatable[corev1.ResourcePods]) > 0,
		}
		seen := map[corev1.ResourceName]bool{}
		for _, fv := range ns.Free {
			for name := range fv.Resources {
				if !seen[name] {
					seen[name] = true
					s.names = append(s.names, name)
				}
			}
		}
		slices.Sort(s.names)
		for _, fv := range ns.Free {
			if fv.Count < 1 {
				continue
			}
			free := make([]int64, len(s.names))
			for j, name := range s.names {
				free[j] = MilliOf(fv.Resources[name])
			}
			s.vectors = append(s.vectors, viewVector{count: int64(fv.Count), free: free})
		}
		v.shapes = append(v.shapes, s)
	}
	v.indexMachines(st)
	v.indexKinds(st)
	v.indexPools(st)
	return v
}

// need is one amount a replica needs, located in a shape's index (-1 when
// the shape has none of that resource free anywhere).
type need struct {
	name  corev1.ResourceName
	milli int64
	index int
	// label describes a need of devices (see DeviceRequest.String); empty
	// for a resource.
	label string
}

// key names the need in reasons.
func (n need) key() string {
	if n.label != "" {
		return n.label
	}
	return string(n.name)
}

// text is how much of the need a node offers, for reasons.
func (n need) text(milli int64) string {
	if n.label != "" {
		return fmt.Sprintf("%d of %s", milli/1000, n.label)
	}
	return amountText(n.name, milli)
}

func (s *viewShape) needs(r *Request) []need {
	return s.appendNeeds(make([]need, 0, len(r.amounts)+1), r)
}

// appendNeeds appends needs(r) to out, so that callers may reuse a buffer.
// Both r.amounts and s.names are sorted, so one walk finds the indexes.
func (s *viewShape) appendNeeds(out []need, r *Request) []need {
	j := 0
	for _, a := range r.amounts {
		for j < len(s.names) && s.names[j] < a.Name {
			j++
		}
		i := -1
		if j < len(s.names) && s.names[j] == a.Name {
			i = j
		}
		out = append(out, need{name: a.Name, milli: a.Milli, index: i})
	}
	if s.podSlots && r.pods > 0 {
		i := sort.Search(len(s.names), func(i int) bool { return s.names[i] >= corev1.ResourcePods })
		if i == len(s.names) || s.names[i] != corev1.ResourcePods {
			i = -1
		}
		out = append(out, need{name: corev1.ResourcePods, milli: r.pods, index: i})
	}
	return out
}

func (n need) free(v *viewVector) int64 {
	if n.index < 0 {
		return 0
	}
	return v.free[n.index]
}

// perNode is how many replicas fit together on a node with v free; it is
// MaxInt64 when nothing is needed.
func perNode(v *viewVector, needs []need) int64 {
	fit := int64(math.MaxInt64)
	for _, n := range needs {
		fit = min(fit, n.free(v)/n.milli)
		if fit == 0 {
			break
		}
	}
	return fit
}

// usable reports whether the shape's nodes may take pods passing sel.
func (s *viewShape) usable(sel *Selector) bool {
	if !s.schedulable || !sel.matchesLabels(s.labels) {
		return false
	}
	_, untolerated := sel.untolerated(s.taints)
	return !untolerated
}

// MaxReplicas returns how many replicas of r fit in the cluster: each
// reported node takes as many as fit together in its free resources, and no
// amount is ever split across nodes. The count is a lower bound of what the
// real nodes can take; exact is true when it is exactly what the reported
// (grid-rounded) free amounts allow, which holds when no usable shape was
// truncated. The count saturates at MaxInt64 when nothing constrains r. For a
// machine request it is FreeMachines, which is exact.
func (v *View) MaxReplicas(r *Request) (count int64, exact bool) {
	exact = true
	if r.machine != nil {
		count, _ = v.FreeMachines(r)
		return count, exact
	}
	if _, unknown := v.Unreported(r.sel); unknown {
		return 0, exact
	}
	for i := range v.shapes {
		s := &v.shapes[i]
		if !s.usable(r.sel) {
			continue
		}
		if s.truncated {
			exact = false
		}
		buf, bounds := s.alternatives(nil, nil, r, v)
		for j := range s.vectors {
			vec := &s.vectors[j]
			n := int64(0)
			for _, b := range bounds {
				n = max(n, perNode(vec, buf[b[0]:b[1]]))
			}
			if n > 0 && vec.count > (math.MaxInt64-count)/n {
				return math.MaxInt64, exact
			}
			count += vec.count * n
		}
	}
	return count, exact
}

// FreeOnBestNode returns the largest free amount of name on one usable node
// passing sel, and false when no usable node passes sel.
func (v *View) FreeOnBestNode(name corev1.ResourceName, sel *Selector) (resource.Quantity, bool) {
	best, found := int64(0), false
	if _, unknown := v.Unreported(sel); unknown {
		return quantity(name, best), found
	}
	for i := range v.shapes {
		s := &v.shapes[i]
		if !s.usable(sel) || len(s.vectors) == 0 {
			continue
		}
		found = true
		j := sort.Search(len(s.names), func(j int) bool { return s.names[j] >= name })
		if j == len(s.names) || s.names[j] != name {
			continue
		}
		for k := range s.vectors {
			best = max(best, s.vectors[k].free[j])
		}
	}
	return quantity(name, best), found
}

// FitsOnOneNode reports whether some usable node has everything r needs
// free at once. When none has, the message says why, in the terms of the
// first obstacle met: a label the cluster does not report, no schedulable
// node, none with the features, none tolerating the taints, or the
// resources, with the best a node offers. For a machine request it reports
// whether the cluster has a machine of its type free (see FreeMachines).
func (v *View) FitsOnOneNode(r *Request) (bool, string) {
	if r.machine != nil {
		return v.fitsMachine(r)
	}
	if key, unknown := v.Unreported(r.sel); unknown {
		return false, unreportedText(key)
	}
	with := ""
	if t := r.sel.String(); t != "" {
		with = " with " + t
	}
	var (
		schedulable, matching bool
		// taint is the first untolerated taint met, and tainted says whether
		// there was one: a taint's key may be empty, so the key cannot tell.
		taint      corev1.Taint
		tainted    bool
		usable     bool
		best       map[string]int64
		want       map[string]need
		order      []string
		closest    []string
		closestMet = -1
	)
	for i := range v.shapes {
		s := &v.shapes[i]
		if !s.schedulable {
			continue
		}
		schedulable = true
		if !r.sel.matchesLabels(s.labels) {
			continue
		}
		matching = true
		if t, ok := r.sel.untolerated(s.taints); ok {
			if !tainted {
				taint, tainted = t, true
			}
			continue
		}
		buf, bounds := s.alternatives(nil, nil, r, v)
		for j := range s.vectors {
			vec := &s.vectors[j]
			for _, b := range bounds {
				needs := buf[b[0]:b[1]]
				if perNode(vec, needs) > 0 {
					return true, ""
				}
				usable = true
				met := 0
				var offer []string
				for _, n := range needs {
					f := n.free(vec)
					if best == nil {
						best, want = map[string]int64{}, map[string]need{}
					}
					k := n.key()
					if b, seen := best[k]; !seen {
						order = append(order, k)
						best[k], want[k] = f, n
					} else if f > b {
						best[k] = f
					}
					if f >= n.milli {
						met++
					}
					offer = append(offer, n.text(f))
				}
				if met > closestMet {
					closestMet, closest = met, offer
				}
			}
		}
	}
	switch {
	case !schedulable:
		return false, "no schedulable node"
	case !matching:
		return false, "no schedulable node" + with
	case !usable && tainted:
		return false, fmt.Sprintf("every schedulable node%s has a taint the request does not tolerate, e.g. %s", with, taint.ToString())
	case !usable:
		return false, "no schedulable node" + with + " reports any free resources"
	}
	// A single resource no node has enough of explains it best.
	needsText := make([]string, 0, len(order))
	for _, k := range order {
		n := want[k]
		if n.label != "" {
			if best[k] < n.milli {
				return false, fmt.Sprintf("no schedulable node%s has %s free; the best has %d", with, n.label, best[k]/1000)
			}
			needsText = append(needsText, n.label)
			continue
		}
		if best[k] < n.milli {
			return false, fmt.Sprintf("no schedulable node%s has %s free; the best has %s",
				with, amountText(n.name, n.milli), quantityText(n.name, best[k]))
		}
		needsText = append(needsText, amountText(n.name, n.milli))
	}
	return false, fmt.Sprintf("no schedulable node%s has %s free at once; the closest has %s",
		with, strings.Join(needsText, ", "), strings.Join(closest, ", "))
}

func quantityText(name corev1.ResourceName, milli int64) string {
	q := quantity(name, milli)
	return q.String()
}

func amountText(name corev1.ResourceName, milli int64) string {
	return quantityText(name, milli) + " " + string(name)
}
