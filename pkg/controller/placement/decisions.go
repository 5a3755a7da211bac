package placement

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// maxDecisionsPerObject is the most clusters one PlacementDecision holds, as in OCM.
const maxDecisionsPerObject = 100

// decisionGroup is one decision group: a name (may be empty), its index, and its clusters in
// the order they are written.
type decisionGroup struct {
	name     string
	index    int
	clusters []scheduler.Decision
}

// desiredDecision is one PlacementDecision to write.
type desiredDecision struct {
	name       string
	groupName  string
	groupIndex int
	decisions  []clusterv1beta1.ClusterDecision
}

// groupLength turns clustersPerDecisionGroup (an int or a percentage) into a group size, as
// OCM does: a percentage rounds up, and a size outside (0, total] means one group.
func groupLength(v intstr.IntOrString, total int) (int, *framework.Status) {
	length := total
	switch v.Type {
	case intstr.Int:
		length = v.IntValue()
	case intstr.String:
		if v.StrVal == "" {
			break
		}
		pct, ok := strings.CutSuffix(v.StrVal, "%")
		f, err := strconv.ParseFloat(pct, 64)
		if !ok || err != nil {
			// OCM's message, with the field it is about.
			return 0, framework.Misconfiguredf("clustersPerDecisionGroup %v invalid type: string is not a percentage", v.StrVal)
		}
		length = int(math.Ceil(f / 100 * float64(total)))
	}
	if length <= 0 || length > total {
		length = total
	}
	return length, nil
}

// groupDecisions splits the selected clusters into decision groups: first each predefined
// group (label and claim selectors; a cluster joins the first group that matches), then the
// rest in an unnamed group, each cut into chunks of clustersPerDecisionGroup. Within a group,
// clusters are ordered by sortBy: by name (the default, as OCM) or by score.
func groupDecisions(p *clusterv1beta1.Placement, snap *framework.Snapshot, selected []scheduler.Decision) ([]decisionGroup, *framework.Status) {
	length, st := groupLength(p.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup, len(selected))
	if st != nil {
		return nil, st
	}
	taken := make([]bool, len(selected))
	var groups []decisionGroup
	add := func(name string, members []scheduler.Decision) {
		sortDecisions(p.Spec.SortBy, members)
		for len(members) > 0 {
			n := min(length, len(members))
			groups = append(groups, decisionGroup{name: name, index: len(groups), clusters: members[:n:n]})
			members = members[n:]
		}
	}
	for _, g := range p.Spec.DecisionStrategy.GroupStrategy.DecisionGroups {
		ls, err := metav1.LabelSelectorAsSelector(&g.ClusterSelector.LabelSelector)
		if err != nil {
			return nil, framework.Misconfiguredf("decision group %q: %v", g.GroupName, err)
		}
		cs, err := metav1.LabelSelectorAsSelector(&metav1.LabelSelector{MatchExpressions: g.ClusterSelector.ClaimSelector.MatchExpressions})
		if err != nil {
			return nil, framework.Misconfiguredf("decision group %q: %v", g.GroupName, err)
		}
		var members []scheduler.Decision
		for k, d := range selected {
			if taken[k] {
				continue
			}
			i, ok := snap.Index(d.ClusterName)
			if !ok {
				continue
			}
			info := snap.Cluster(i)
			if ls.Matches(labels.Set(info.Cluster.Labels)) && cs.Matches(info.Claims) {
				taken[k] = true
				members = append(members, d)
			}
		}
		add(g.GroupName, members)
	}
	var rest []scheduler.Decision
	for k, d := range selected {
		if !taken[k] {
			rest = append(rest, d)
		}
	}
	add("", rest)
	if len(groups) == 0 {
		groups = append(groups, decisionGroup{})
	}
	return groups, nil
}

func sortDecisions(by clusterv1beta1.PlacementSortByType, ds []scheduler.Decision) {
	slices.SortStableFunc(ds, func(a, b scheduler.Decision) int {
		if by == clusterv1beta1.PlacementSortByScore && a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ClusterName, b.ClusterName)
	})
}

// layoutDecisions assigns the groups' clusters to PlacementDecisions named as OCM names them
// (<placement>-decision-<n>, n from 1 across groups), at most 100 clusters each.
//
// Unlike OCM, a cluster that stays selected stays in the PlacementDecision that already holds
// it when that object still belongs to the cluster's group: with more than 100 clusters, a
// new cluster sorting early no longer shifts every later cluster into the next object, which
// made consumers see clusters vanish between two writes. New clusters fill free slots in
// order; each object's list is then sorted by sortBy.
func layoutDecisions(placementName string, sortBy clusterv1beta1.PlacementSortByType, groups []decisionGroup, existing map[string][]string) []desiredDecision {
	var out []desiredDecision
	next := 1
	for _, g := range groups {
		count := max(1, (len(g.clusters)+maxDecisionsPerObject-1)/maxDecisionsPerObject)
		names := make([]string, count)
		for k := range names {
			names[k] = fmt.Sprintf("%s-decision-%d", placementName, next)
			next++
		}
		byName := make(map[string]scheduler.Decision, len(g.clusters))
		for _, d := range g.clusters {
			byName[d.ClusterName] = d
		}
		slots := make([][]scheduler.Decision, count)
		placed := sets.New[string]()
		for k, name := range names {
			for _, cl := range existing[name] {
				if d, ok := byName[cl]; ok && !placed.Has(cl) && len(slots[k]) < maxDecisionsPerObject {
					slots[k] = append(slots[k], d)
					placed.Insert(cl)
				}
			}
		}
		k := 0
		for _, d := range g.clusters {
			if placed.Has(d.ClusterName) {
				continue
			}
			for len(slots[k]) >= maxDecisionsPerObject {
				k++
			}
			slots[k] = append(slots[k], d)
		}
		for k, name := range names {
			sortDecisions(sortBy, slots[k])
			dd := desiredDecision{name: name, groupName: g.name, groupIndex: g.index, decisions: []clusterv1beta1.ClusterDecision{}}
			for _, d := range slots[k] {
				dd.decisions = append(dd.decisions, clusterv1beta1.ClusterDecision{ClusterName: d.ClusterName, Score: d.Score})
			}
			out = append(out, dd)
		}
	}
	return out
}

// interimDecisions returns, for each PlacementDecision that loses a cluster which another one
// gains, a list to write first: what it keeps, plus the clusters that are moving away, plus as
// many new clusters as fit. Writing these before the final lists means that a cluster moving
// between two objects is always in at least one of them.
func interimDecisions(desired []desiredDecision, existing map[string][]string) map[string][]clusterv1beta1.ClusterDecision {
	final := map[string]string{} // cluster -> decision name
	scores := map[string]int64{}
	for _, d := range desired {
		for _, cd := range d.decisions {
			final[cd.ClusterName] = d.name
			scores[cd.ClusterName] = cd.Score
		}
	}
	out := map[string][]clusterv1beta1.ClusterDecision{}
	for _, d := range desired {
		old := existing[d.name]
		var moving []string
		for _, cl := range old {
			if target, ok := final[cl]; ok && target != d.name {
				moving = append(moving, cl)
			}
		}
		if len(moving) == 0 {
			continue
		}
		oldSet := sets.New(old...)
		var interim []clusterv1beta1.ClusterDecision
		for _, cd := range d.decisions {
			if oldSet.Has(cd.ClusterName) {
				interim = append(interim, cd)
			}
		}
		for _, cl := range moving {
			interim = append(interim, clusterv1beta1.ClusterDecision{ClusterName: cl, Score: scores[cl]})
		}
		for _, cd := range d.decisions {
			if len(interim) >= maxDecisionsPerObject {
				break
			}
			if !oldSet.Has(cd.ClusterName) {
				interim = append(interim, cd)
			}
		}
		out[d.name] = interim
	}
	// Decisions that disappear entirely are deleted last, after every final list is written,
	// so their clusters need no interim.
	return out
}

// decisionClusterNames lists the cluster names of a decision list.
func decisionClusterNames(ds []clusterv1beta1.ClusterDecision) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.ClusterName)
	}
	return out
}
