package getcmd

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// machines is the MACHINES column of a cluster: its machine types with the machines free (a
// reservation running, which a new guest takes at once: usage.reserved) of their maximum, as
// "compute-xlarge 1/2", by type name over all groups; -o wide names them per group, as
// "general-machine/compute-xlarge 1/2", and marks the types of a group that is not ready.
// A cluster without machine groups has <none>; groups its agent left out of the report are
// counted at the end.
func machines(st *fleetfitv1alpha1.ClusterInventoryStatus, wide bool) string {
	type free struct {
		name              string
		reserved, maximum int32
		notReady          bool
	}
	var types []free
	index := map[string]int{}
	for _, g := range st.MachineGroups {
		for _, t := range g.MachineTypes {
			name := t.Name
			if wide {
				name = g.Name + "/" + t.Name
			}
			i, ok := index[name]
			if !ok {
				i = len(types)
				index[name] = i
				types = append(types, free{name: name})
			}
			types[i].reserved += t.Usage.Reserved
			types[i].maximum += t.Usage.Maximum
			types[i].notReady = types[i].notReady || !g.Ready
		}
	}
	slices.SortFunc(types, func(a, b free) int { return cmp.Compare(a.name, b.name) })
	parts := make([]string, 0, len(types)+1)
	for _, t := range types {
		p := fmt.Sprintf("%s %d/%d", t.name, t.reserved, t.maximum)
		if wide && t.notReady {
			p += " (not ready)"
		}
		parts = append(parts, p)
	}
	if n := st.OmittedMachineGroups; n > 0 {
		parts = append(parts, fmt.Sprintf("+%d groups not reported", n))
	}
	if len(parts) == 0 {
		return "<none>"
	}
	return strings.Join(parts, ", ")
}
