package scheduler

import (
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// selectClusters picks want clusters from ordered (feasible clusters, best first).
//
// Without spread constraints it takes the first want, as OCM does. With spreadPolicy and a
// numberOfClusters, it picks greedily in score order, keeping for every constraint the skew —
// the selected count of a topology value minus the smallest selected count over the values
// that feasible clusters have — within maxSkew:
//   - DoNotSchedule constraints are hard: a cluster that would break one is skipped, and a
//     cluster without the topology key is never selected; fewer than want may be selected.
//   - ScheduleAnyway constraints are preferences: when no remaining cluster keeps them, the
//     best-scored cluster that keeps the hard constraints is taken anyway.
//
// Without numberOfClusters every feasible cluster is selected, so there is nothing to spread.
func selectClusters(snap *framework.Snapshot, p *clusterv1beta1.Placement, ordered []int, want int) ([]int, *framework.Status) {
	if want >= len(ordered) && p.Spec.NumberOfClusters == nil || len(p.Spec.SpreadPolicy.SpreadConstraints) == 0 {
		if want > len(ordered) {
			want = len(ordered)
		}
		return ordered[:want:want], nil
	}
	constraints := make([]*spreadConstraint, 0, len(p.Spec.SpreadPolicy.SpreadConstraints))
	for _, t := range p.Spec.SpreadPolicy.SpreadConstraints {
		c, st := newSpreadConstraint(snap, t, ordered)
		if st != nil {
			return nil, st
		}
		constraints = append(constraints, c)
	}
	selected := make([]int, 0, want)
	taken := make([]bool, len(ordered))
	for len(selected) < want {
		pick := -1
		for k, i := range ordered {
			if !taken[k] && allow(constraints, i, true) {
				pick = k
				break
			}
		}
		if pick < 0 {
			for k, i := range ordered {
				if !taken[k] && allow(constraints, i, false) {
					pick = k
					break
				}
			}
		}
		if pick < 0 {
			break
		}
		taken[pick] = true
		i := ordered[pick]
		selected = append(selected, i)
		for _, c := range constraints {
			c.add(i)
		}
	}
	return selected, nil
}

func allow(constraints []*spreadConstraint, i int, soft bool) bool {
	for _, c := range constraints {
		if !c.hard && !soft {
			continue
		}
		if !c.allows(i) {
			return false
		}
	}
	return true
}

type spreadConstraint struct {
	hard    bool
	maxSkew int
	// domain[i] is the topology value index of cluster i, or -1 without the key.
	domain map[int]int
	counts []int
}

func newSpreadConstraint(snap *framework.Snapshot, t clusterv1beta1.SpreadConstraintsTerm, ordered []int) (*spreadConstraint, *framework.Status) {
	if t.TopologyKey == "" {
		return nil, framework.Misconfiguredf("spreadConstraints: topologyKey is required")
	}
	c := &spreadConstraint{maxSkew: int(t.MaxSkew), domain: make(map[int]int, len(ordered))}
	if c.maxSkew <= 0 {
		c.maxSkew = 1
	}
	switch t.WhenUnsatisfiable {
	case clusterv1beta1.DoNotSchedule, "":
		c.hard = true
	case clusterv1beta1.ScheduleAnyway:
	default:
		return nil, framework.Misconfiguredf("spreadConstraints: whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway, not %q", t.WhenUnsatisfiable)
	}
	values := map[string]int{}
	for _, i := range ordered {
		info := snap.Cluster(i)
		var v string
		var ok bool
		switch t.TopologyKeyType {
		case clusterv1beta1.TopologyKeyTypeLabel, "":
			v, ok = info.Cluster.Labels[t.TopologyKey]
		case clusterv1beta1.TopologyKeyTypeClaim:
			v, ok = info.Claims[t.TopologyKey]
		default:
			return nil, framework.Misconfiguredf("spreadConstraints: topologyKeyType must be Label or Claim, not %q", t.TopologyKeyType)
		}
		if !ok {
			c.domain[i] = -1
			continue
		}
		d, seen := values[v]
		if !seen {
			d = len(values)
			values[v] = d
		}
		c.domain[i] = d
	}
	c.counts = make([]int, len(values))
	return c, nil
}

func (c *spreadConstraint) allows(i int) bool {
	d := c.domain[i]
	if d < 0 {
		return !c.hard
	}
	minCount := c.counts[0]
	for _, n := range c.counts[1:] {
		minCount = min(minCount, n)
	}
	// After adding i, the minimum can only rise if d was the only minimum; use the post-add
	// minimum so that filling the emptiest domain is always allowed.
	after := c.counts[d] + 1
	newMin := minCount
	if c.counts[d] == minCount {
		newMin = after
		for k, n := range c.counts {
			if k != d && n < newMin {
				newMin = n
			}
		}
	}
	return after-newMin <= c.maxSkew
}

func (c *spreadConstraint) add(i int) {
	if d := c.domain[i]; d >= 0 {
		c.counts[d]++
	}
}
