// Package sigdecision mirrors the hub's OCM PlacementDecisions into the SIG-Multicluster
// PlacementDecision API (multicluster.x-k8s.io/v1alpha1, sigs.k8s.io/cluster-inventory-api),
// the scheduler-neutral form that multicluster consumers read.
//
// OCM's placement controller writes this mirror itself when its SIGPlacementDecision feature
// is on. When fleetfit-hub replaces that controller (--placements all) the mirror would stop
// with it, so fleetfit-hub writes it instead, under the same contract, so that a consumer
// cannot tell the two apart and either controller can take over the other's objects:
//
//   - one SIG PlacementDecision per OCM PlacementDecision, with the same namespace and name;
//   - labels: x-k8s.io/cluster-manager=open-cluster-management on every object; the
//     placement's name as multicluster.x-k8s.io/placement-key and decision-key (so the
//     slices of one placement are found together); OCM's decision-group index as
//     multicluster.x-k8s.io/decision-index;
//   - one decision per cluster, in the OCM object's order, whose clusterProfileRef names the
//     cluster in the placement's namespace, with the OCM decision's reason;
//   - schedulerName open-cluster-management;
//   - a controller owner reference to the OCM PlacementDecision, so that the garbage
//     collector deletes the mirror with it (and so with its Placement).
//
// Only objects carrying the cluster-manager label are ever updated; a SIG PlacementDecision
// of the same name written by another scheduler is left alone.
package sigdecision

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	sigv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
)

// ClusterManager is the value of the cluster-manager label and the schedulerName of every
// mirrored decision: OCM's, because fleetfit-hub stands in for OCM's placement controller and
// its mirror must be the one that controller would write.
const ClusterManager = "open-cluster-management"

// ownedLabels are the label keys the mirror sets; any other label on a mirrored object is
// someone else's and is kept.
var ownedLabels = []string{
	sigv1alpha1.LabelClusterManagerKey,
	sigv1alpha1.PlacementKeyLabel,
	sigv1alpha1.DecisionKeyLabel,
	sigv1alpha1.DecisionIndexLabel,
}

// Desired returns the SIG PlacementDecision that mirrors an OCM PlacementDecision.
func Desired(d *clusterv1beta1.PlacementDecision) *sigv1alpha1.PlacementDecision {
	labels := map[string]string{sigv1alpha1.LabelClusterManagerKey: ClusterManager}
	if placement, ok := d.Labels[clusterv1beta1.PlacementLabel]; ok {
		labels[sigv1alpha1.PlacementKeyLabel] = placement
		labels[sigv1alpha1.DecisionKeyLabel] = placement
	}
	if index, ok := d.Labels[clusterv1beta1.DecisionGroupIndexLabel]; ok {
		labels[sigv1alpha1.DecisionIndexLabel] = index
	}
	// Never nil: the CRD requires the field, and an empty placement has an empty list.
	decisions := make([]sigv1alpha1.ClusterDecision, 0, len(d.Status.Decisions))
	for _, cd := range d.Status.Decisions {
		decisions = append(decisions, sigv1alpha1.ClusterDecision{
			ClusterProfileRef: sigv1alpha1.ClusterProfileReference{Name: cd.ClusterName, Namespace: d.Namespace},
			Reason:            cd.Reason,
		})
	}
	return &sigv1alpha1.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: d.Namespace,
			Name:      d.Name,
			Labels:    labels,
			OwnerReferences: []metav1.OwnerReference{
				*metav1.NewControllerRef(d, clusterv1beta1.SchemeGroupVersion.WithKind("PlacementDecision")),
			},
		},
		Decisions:     decisions,
		SchedulerName: ClusterManager,
	}
}

// Merge returns existing with what the mirror owns set from desired, or nil when existing
// already holds it. Labels the mirror does not own are kept.
func Merge(existing, desired *sigv1alpha1.PlacementDecision) *sigv1alpha1.PlacementDecision {
	labels := maps.Clone(existing.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range ownedLabels {
		delete(labels, k)
	}
	maps.Copy(labels, desired.Labels)
	if maps.Equal(labels, existing.Labels) &&
		equalOwners(existing.OwnerReferences, desired.OwnerReferences) &&
		equalDecisions(existing.Decisions, desired.Decisions) &&
		existing.SchedulerName == desired.SchedulerName {
		return nil
	}
	out := existing.DeepCopy()
	out.Labels = labels
	out.OwnerReferences = desired.OwnerReferences
	out.Decisions = desired.Decisions
	out.SchedulerName = desired.SchedulerName
	return out
}

func equalOwners(a, b []metav1.OwnerReference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].APIVersion != b[i].APIVersion || a[i].Kind != b[i].Kind || a[i].Name != b[i].Name || a[i].UID != b[i].UID ||
			!equalBoolPtr(a[i].Controller, b[i].Controller) || !equalBoolPtr(a[i].BlockOwnerDeletion, b[i].BlockOwnerDeletion) {
			return false
		}
	}
	return true
}

func equalBoolPtr(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// equalDecisions compares decision lists; an absent list and an empty one are the same.
func equalDecisions(a, b []sigv1alpha1.ClusterDecision) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
