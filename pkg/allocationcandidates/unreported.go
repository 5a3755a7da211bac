package allocationcandidates

import (
	"errors"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// unreportedTraits returns an *Error naming the parameter of the first trait (groups in
// order, then the traits of each) whose label no cluster's agent reports. Such a trait can
// match no node anywhere, whatever the fleet's capacity, so "no candidates" would send the
// user looking for room; OpenStack answers an unknown trait with 400 too. A fleet with no
// inventory at all says nothing about labels, and is answered (with no candidates). The
// look-ups count against b: a query of thousands of traits over thousands of clusters is
// refused like any other costly one (the error is then the budget's, which the caller reads
// from b).
func unreportedTraits(snap *framework.Snapshot, q *Query, b *budget) error {
	var traits []*Trait
	var params []string
	for i := range q.Groups {
		g := &q.Groups[i]
		for j := range g.Required {
			traits, params = append(traits, &g.Required[j]), append(params, "required"+g.Suffix)
		}
		for _, anyOf := range g.AnyOf {
			for j := range anyOf {
				traits, params = append(traits, &anyOf[j]), append(params, "required"+g.Suffix)
			}
		}
	}
	if len(traits) == 0 {
		return nil
	}
	reported := make([]bool, len(traits))
	left, views := len(traits), 0
	for i := 0; i < snap.NumClusters() && left > 0; i++ {
		v := snap.Cluster(i).View
		if v == nil {
			continue
		}
		views++
		if !b.add(int64(left)) {
			return errors.New("over the budget")
		}
		for k, t := range traits {
			if !reported[k] {
				if _, unknown := v.Unreported(t.sel); !unknown {
					reported[k], left = true, left-1
				}
			}
		}
	}
	if views == 0 {
		return nil
	}
	for k, t := range traits {
		if !reported[k] {
			return errorf(params[k], "no cluster reports the node label %s (of %s), so no node can be said to have it or lack it: "+
				"agents report the labels under their --feature-prefixes; add %s (or a prefix of it) to them", t.Key, t.Text, t.Key)
		}
	}
	return nil
}
