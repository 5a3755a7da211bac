package placement

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// statusFor computes the Placement status after a successful cycle, with OCM's fields,
// condition types and reasons.
func statusFor(p *clusterv1beta1.Placement, res *scheduler.Result, desired []desiredDecision) clusterv1beta1.PlacementStatus {
	status := *p.Status.DeepCopy()
	selected := 0
	status.DecisionGroups = []clusterv1beta1.DecisionGroupStatus{}
	for _, d := range desired {
		selected += len(d.decisions)
		n := len(status.DecisionGroups)
		if n == 0 || status.DecisionGroups[n-1].DecisionGroupIndex != int32(d.groupIndex) {
			status.DecisionGroups = append(status.DecisionGroups, clusterv1beta1.DecisionGroupStatus{
				DecisionGroupIndex: int32(d.groupIndex),
				DecisionGroupName:  d.groupName,
				Decisions:          []string{},
			})
			n++
		}
		g := &status.DecisionGroups[n-1]
		g.Decisions = append(g.Decisions, d.name)
		g.ClustersCount += int32(len(d.decisions))
	}
	status.NumberOfSelectedClusters = int32(selected)
	meta.SetStatusCondition(&status.Conditions, misconfiguredCondition(nil))
	meta.SetStatusCondition(&status.Conditions, satisfiedCondition(p, res))
	return status
}

func misconfiguredCondition(st *framework.Status) metav1.Condition {
	if st.Code() == framework.Misconfigured {
		return metav1.Condition{
			Type:    clusterv1beta1.PlacementConditionMisconfigured,
			Status:  metav1.ConditionTrue,
			Reason:  "Misconfigured",
			Message: conditionMessage(st),
		}
	}
	return metav1.Condition{
		Type:    clusterv1beta1.PlacementConditionMisconfigured,
		Status:  metav1.ConditionFalse,
		Reason:  "Succeedconfigured",
		Message: "Placement configurations check pass",
	}
}

// satisfiedCondition follows OCM's order of checks and its reasons and messages.
func satisfiedCondition(p *clusterv1beta1.Placement, res *scheduler.Result) metav1.Condition {
	// The generation it was computed for tells the next cycle whether the placement changed
	// since (see holdStill).
	c := metav1.Condition{Type: clusterv1beta1.PlacementConditionSatisfied, Status: metav1.ConditionFalse, ObservedGeneration: p.Generation}
	switch {
	case res.NumBindings == 0:
		c.Reason = "NoManagedClusterSetBindings"
		c.Message = "No valid ManagedClusterSetBindings found in placement namespace"
	case len(res.EligibleSets) == 0:
		c.Reason = "NoIntersection"
		c.Message = fmt.Sprintf("None of ManagedClusterSets [%s] is bound to placement namespace", strings.Join(p.Spec.ClusterSets, ","))
	case res.NumAvailable() == 0:
		c.Reason = "AllManagedClusterSetsEmpty"
		c.Message = fmt.Sprintf("All ManagedClusterSets [%s] have no member ManagedCluster", strings.Join(res.EligibleSets, ","))
	case len(res.Decisions()) == 0:
		c.Reason = "NoManagedClusterMatched"
		c.Message = "No ManagedCluster matches any of the cluster predicate"
	case res.Unscheduled == 0:
		c.Status = metav1.ConditionTrue
		c.Reason = "AllDecisionsScheduled"
		c.Message = "All cluster decisions scheduled"
	default:
		c.Reason = "NotAllDecisionsScheduled"
		c.Message = fmt.Sprintf("%d cluster decisions unscheduled", res.Unscheduled)
	}
	return c
}
