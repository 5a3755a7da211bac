package inventory

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// MachineType names a machine type of a cluster's MachineGroup.
type MachineType struct {
	Group, Name string
}

// String is "group/name", as reasons show it.
func (m MachineType) String() string { return m.Group + "/" + m.Name }

// MachineResourcePrefix starts the pseudo resource names of machine types (see
// MachineResourceName).
const MachineResourcePrefix = "machines.fleetfit.io/"

// MachineResourceName is the pseudo resource that counts machines of type m
// in a reservation's amounts and in a cluster's requested totals: one unit a
// machine. It never names a real resource, so it is never asked of a node.
func MachineResourceName(m MachineType) corev1.ResourceName {
	return corev1.ResourceName(MachineResourcePrefix + m.Group + "." + m.Name)
}

// MachinesInUse returns, per machine type the status reports, the pseudo
// resource of MachineResourceName with the type's usage.used in milli-units:
// guests take over reservation pods of their own size, so the node totals do
// not grow when they start, and a reservation of machines is seen through
// this count instead.
func MachinesInUse(st *v1alpha1.ClusterInventoryStatus, out map[corev1.ResourceName]int64) {
	for i := range st.MachineGroups {
		g := &st.MachineGroups[i]
		for j := range g.MachineTypes {
			t := &g.MachineTypes[j]
			out[MachineResourceName(MachineType{Group: g.Name, Name: t.Name})] = 1000 * int64(max(t.Usage.Used, 0))
		}
	}
}

// NewMachineRequest compiles one replica of a consumer that takes one machine
// of type m: no amounts of its own (the machine's reservation pod already
// holds them on its node, and the guest takes its place) and no pod slot, and
// features that some schedulable node must have (see View.FreeMachines).
// Taints are not checked: machine nodes are commonly tainted for their group,
// and the spoke's injector gives a guest what its reservation tolerated.
func NewMachineRequest(m MachineType, features []corev1.NodeSelectorRequirement) (*Request, error) {
	if m.Group == "" || m.Name == "" {
		return nil, errors.New("a machine type needs a group and a name")
	}
	sel, err := NewSelector(features, nil)
	if err != nil {
		return nil, err
	}
	return &Request{sel: sel, machine: &m}, nil
}

// MachineType returns the machine type each replica of r takes, and false
// for a request of amounts.
func (r *Request) MachineType() (MachineType, bool) {
	if r == nil || r.machine == nil {
		return MachineType{}, false
	}
	return *r.machine, true
}

// viewMachine is one machine type a cluster reports, with its free machines:
// reservation pods that no guest has taken.
type viewMachine struct {
	MachineType
	free int64
}

// indexMachines reads st's machine groups into v, sorted by group and type.
// Negative counts read as zero; a type reported twice counts once, with the
// fewer free machines.
func (v *View) indexMachines(st *v1alpha1.ClusterInventoryStatus) {
	for i := range st.MachineGroups {
		g := &st.MachineGroups[i]
		v.machineGroups = append(v.machineGroups, g.Name)
		for j := range g.MachineTypes {
			t := &g.MachineTypes[j]
			v.machines = append(v.machines, viewMachine{
				MachineType: MachineType{Group: g.Name, Name: t.Name},
				free:        int64(max(t.Usage.Reserved, 0)),
			})
		}
	}
	slices.Sort(v.machineGroups)
	v.machineGroups = slices.Compact(v.machineGroups)
	slices.SortStableFunc(v.machines, func(a, b viewMachine) int { return compareMachineTypes(a.MachineType, b.MachineType) })
	kept := v.machines[:0]
	for _, m := range v.machines {
		if n := len(kept); n > 0 && kept[n-1].MachineType == m.MachineType {
			kept[n-1].free = min(kept[n-1].free, m.free)
			continue
		}
		kept = append(kept, m)
	}
	v.machines = kept
}

func compareMachineTypes(a, b MachineType) int {
	if c := cmp.Compare(a.Group, b.Group); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// machineIndex returns the index of m in v.machines, or -1.
func (v *View) machineIndex(m MachineType) int {
	i, found := slices.BinarySearchFunc(v.machines, m, func(e viewMachine, m MachineType) int {
		return compareMachineTypes(e.MachineType, m)
	})
	if !found {
		return -1
	}
	return i
}

// offerProblem is why a cluster does not offer a machine request's type.
type offerProblem uint8

const (
	offered offerProblem = iota
	unreportedLabel
	noGroup
	noType
	noNodeWithFeatures
)

// machineOffer returns the index of r's machine type in v.machines when the
// cluster offers it to r: it reports the type, and r's features are on
// reported labels and some schedulable node has them. Otherwise it returns -1
// and the problem, which offerText words; it allocates nothing, as Place
// calls it. r must be a machine request.
func (v *View) machineOffer(r *Request) (int, offerProblem) {
	if _, unknown := v.Unreported(r.sel); unknown {
		return -1, unreportedLabel
	}
	i := v.machineIndex(*r.machine)
	if i < 0 {
		if _, found := slices.BinarySearch(v.machineGroups, r.machine.Group); !found {
			return -1, noGroup
		}
		return -1, noType
	}
	if !v.labelledNode(r.sel) {
		return -1, noNodeWithFeatures
	}
	return i, offered
}

// offerText says why the cluster does not offer r's machine type; it is
// empty when it does.
func (v *View) offerText(r *Request, p offerProblem) string {
	switch p {
	case unreportedLabel:
		key, _ := v.Unreported(r.sel)
		return unreportedText(key)
	case noGroup:
		return fmt.Sprintf("cluster reports no machine group %s", r.machine.Group)
	case noType:
		return fmt.Sprintf("machine group %s has no type %s", r.machine.Group, r.machine.Name)
	case noNodeWithFeatures:
		return fmt.Sprintf("%s: no schedulable node with %s", r.machine, r.sel.String())
	}
	return ""
}

// labelledNode reports whether some schedulable node has the features sel
// requires, whatever its taints; it is true for a selector of no features.
//
// The report does not say which nodes a group's free machines are on, so a
// machine request with features is taken to fit when the cluster has both
// free machines of its type and a node with its features, not necessarily
// the same nodes. Types are usually bound to node pools of one kind, where
// the two agree.
func (v *View) labelledNode(sel *Selector) bool {
	if sel == nil || len(sel.features) == 0 {
		return true
	}
	for i := range v.shapes {
		if s := &v.shapes[i]; s.schedulable && sel.matchesLabels(s.labels) {
			return true
		}
	}
	return false
}

// OffersMachineType reports whether the cluster still reports r's machine type
// and, when r has features, a schedulable node with them, however many of its
// machines are free; it says why not otherwise. A request of amounts is always
// offered.
func (v *View) OffersMachineType(r *Request) (bool, string) {
	if r.machine == nil {
		return true, ""
	}
	_, p := v.machineOffer(r)
	return p == offered, v.offerText(r, p)
}

// FreeMachines returns how many machines of r's type the cluster reports free
// for r (running reservation pods no guest has taken), and 0 with a reason
// when it does not offer the type to r (see OffersMachineType). It returns
// 0 and no reason for a request of amounts.
func (v *View) FreeMachines(r *Request) (int64, string) {
	if r.machine == nil {
		return 0, ""
	}
	i, p := v.machineOffer(r)
	if i < 0 {
		return 0, v.offerText(r, p)
	}
	return v.machines[i].free, ""
}

// fitsMachine is FitsOnOneNode for a machine request: one machine free.
func (v *View) fitsMachine(r *Request) (bool, string) {
	free, why := v.FreeMachines(r)
	if why != "" {
		return false, why
	}
	if free == 0 {
		return false, MachineShortage(*r.machine, 0, 1)
	}
	return true, ""
}

// MachineShortage is the reason for too few free machines: "group/type: 1
// free, 2 wanted". It is concatenated rather than formatted, as a filter over
// a large fleet words it for every cluster short of machines.
func MachineShortage(m MachineType, free, wanted int64) string {
	return m.Group + "/" + m.Name + ": " + strconv.FormatInt(free, 10) + " free, " + strconv.FormatInt(wanted, 10) + " wanted"
}

// placeMachines is Place for a machine request: replicas take free machines
// of the type, never one another's.
func (a *Allocation) placeMachines(r *Request, replicas int64) int64 {
	i, _ := a.view.machineOffer(r)
	if i < 0 {
		return 0
	}
	n := min(replicas, a.view.machines[i].free-a.machinesTaken[i])
	if n <= 0 {
		return 0
	}
	a.machinesTaken[i] += n
	return n
}
