package machinegroup

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// ConditionReady is the type of a MachineGroup's (and a MachineNodePool's)
// condition that says whether it is set up.
const ConditionReady = "Ready"

// IsReady reports whether conditions hold Ready=True.
func IsReady(conditions []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conditions, ConditionReady)
}

// Report is what a cluster's agent reports of its MachineGroups to the hub:
// the groups sorted by name, each with its machine types in spec order, their
// spec and usage (zero until the machine controller has observed the type),
// and whether the group is Ready. At most v1alpha1.MaxReportedMachineGroups
// groups are returned; omitted counts the rest. groups is not modified.
func Report(groups []*v1alpha1.MachineGroup) (reported []v1alpha1.ReportedMachineGroup, omitted int32) {
	sorted := slices.Clone(groups)
	slices.SortFunc(sorted, func(a, b *v1alpha1.MachineGroup) int { return strings.Compare(a.Name, b.Name) })
	if n := len(sorted) - v1alpha1.MaxReportedMachineGroups; n > 0 {
		omitted = int32(n)
		sorted = sorted[:v1alpha1.MaxReportedMachineGroups]
	}
	if len(sorted) == 0 {
		return nil, omitted
	}
	reported = make([]v1alpha1.ReportedMachineGroup, 0, len(sorted))
	for _, g := range sorted {
		reported = append(reported, reportGroup(g))
	}
	return reported, omitted
}

func reportGroup(g *v1alpha1.MachineGroup) v1alpha1.ReportedMachineGroup {
	r := v1alpha1.ReportedMachineGroup{Name: g.Name, Ready: IsReady(g.Status.Conditions)}
	types := g.Spec.MachineTypes
	if len(types) > v1alpha1.MaxMachineTypes {
		// Admission refuses more; a report must fit the hub's schema anyway.
		types = types[:v1alpha1.MaxMachineTypes]
	}
	if len(types) > 0 {
		r.MachineTypes = make([]v1alpha1.ReportedMachineType, 0, len(types))
	}
	for i := range types {
		t := &types[i]
		r.MachineTypes = append(r.MachineTypes, v1alpha1.ReportedMachineType{
			Name:  t.Name,
			Spec:  *t.Spec.DeepCopy(),
			Usage: UsageOf(g, t.Name),
		})
	}
	return r
}

// UsageOf is the usage of machine type name in the group's status, the zero
// usage when the status has none for it.
func UsageOf(g *v1alpha1.MachineGroup, name string) v1alpha1.MachineUsage {
	for _, a := range g.Status.AvailableMachines {
		if a.Name == name {
			return a.Usage
		}
	}
	return v1alpha1.MachineUsage{}
}
