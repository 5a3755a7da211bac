package testing

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// PlacementWrapper builds Placements for tests.
type PlacementWrapper struct{ clusterv1beta1.Placement }

// MakePlacement returns an empty Placement (all clusters of the bound sets).
func MakePlacement(name, namespace string) *PlacementWrapper {
	return &PlacementWrapper{clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
	}}
}

// Obj returns a copy of the built placement.
func (w *PlacementWrapper) Obj() *clusterv1beta1.Placement { return w.Placement.DeepCopy() }

// Clone returns an independent copy of the wrapper.
func (w *PlacementWrapper) Clone() *PlacementWrapper {
	return &PlacementWrapper{*w.Placement.DeepCopy()}
}

// NumberOfClusters sets spec.numberOfClusters.
func (w *PlacementWrapper) NumberOfClusters(n int32) *PlacementWrapper {
	w.Spec.NumberOfClusters = &n
	return w
}

// ClusterSets sets spec.clusterSets.
func (w *PlacementWrapper) ClusterSets(names ...string) *PlacementWrapper {
	w.Spec.ClusterSets = names
	return w
}

// Annotation sets an annotation.
func (w *PlacementWrapper) Annotation(k, v string) *PlacementWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[k] = v
	return w
}

// Label sets a label.
func (w *PlacementWrapper) Label(k, v string) *PlacementWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[k] = v
	return w
}

// PredicateLabels adds a predicate with a label selector matching the given labels.
func (w *PlacementWrapper) PredicateLabels(matchLabels map[string]string) *PlacementWrapper {
	return w.Predicate(clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{MatchLabels: matchLabels}})
}

// PredicateCEL adds a predicate with CEL expressions.
func (w *PlacementWrapper) PredicateCEL(expressions ...string) *PlacementWrapper {
	return w.Predicate(clusterv1beta1.ClusterSelector{CelSelector: clusterv1beta1.ClusterCelSelector{CelExpressions: expressions}})
}

// Predicate adds a predicate; predicates are ORed.
func (w *PlacementWrapper) Predicate(sel clusterv1beta1.ClusterSelector) *PlacementWrapper {
	w.Spec.Predicates = append(w.Spec.Predicates, clusterv1beta1.ClusterPredicate{RequiredClusterSelector: sel})
	return w
}

// Toleration adds a toleration.
func (w *PlacementWrapper) Toleration(t clusterv1beta1.Toleration) *PlacementWrapper {
	w.Spec.Tolerations = append(w.Spec.Tolerations, t)
	return w
}

// Mode sets the prioritizer policy mode.
func (w *PlacementWrapper) Mode(m clusterv1beta1.PrioritizerPolicyModeType) *PlacementWrapper {
	w.Spec.PrioritizerPolicy.Mode = m
	return w
}

// BuiltIn adds a builtIn prioritizer with a weight.
func (w *PlacementWrapper) BuiltIn(name string, weight int32) *PlacementWrapper {
	w.Spec.PrioritizerPolicy.Configurations = append(w.Spec.PrioritizerPolicy.Configurations, clusterv1beta1.PrioritizerConfig{
		ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{Type: clusterv1beta1.ScoreCoordinateTypeBuiltIn, BuiltIn: name},
		Weight:          weight,
	})
	return w
}

// AddOn adds an AddOn prioritizer with a weight.
func (w *PlacementWrapper) AddOn(resourceName, scoreName string, weight int32) *PlacementWrapper {
	w.Spec.PrioritizerPolicy.Configurations = append(w.Spec.PrioritizerPolicy.Configurations, clusterv1beta1.PrioritizerConfig{
		ScoreCoordinate: &clusterv1beta1.ScoreCoordinate{
			Type:  clusterv1beta1.ScoreCoordinateTypeAddOn,
			AddOn: &clusterv1beta1.AddOnScore{ResourceName: resourceName, ScoreName: scoreName},
		},
		Weight: weight,
	})
	return w
}

// Spread adds a spread constraint.
func (w *PlacementWrapper) Spread(key string, keyType clusterv1beta1.TopologyKeyType, maxSkew int32, when clusterv1beta1.UnsatisfiableMaxSkewAction) *PlacementWrapper {
	w.Spec.SpreadPolicy.SpreadConstraints = append(w.Spec.SpreadPolicy.SpreadConstraints, clusterv1beta1.SpreadConstraintsTerm{
		TopologyKey: key, TopologyKeyType: keyType, MaxSkew: maxSkew, WhenUnsatisfiable: when,
	})
	return w
}

// ClustersPerDecisionGroup sets the group size (an int or a percentage string).
func (w *PlacementWrapper) ClustersPerDecisionGroup(v intstr.IntOrString) *PlacementWrapper {
	w.Spec.DecisionStrategy.GroupStrategy.ClustersPerDecisionGroup = v
	return w
}

// DecisionGroup adds a predefined decision group selecting clusters by labels.
func (w *PlacementWrapper) DecisionGroup(name string, matchLabels map[string]string) *PlacementWrapper {
	w.Spec.DecisionStrategy.GroupStrategy.DecisionGroups = append(w.Spec.DecisionStrategy.GroupStrategy.DecisionGroups,
		clusterv1beta1.DecisionGroup{GroupName: name, ClusterSelector: clusterv1beta1.GroupClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: matchLabels},
		}})
	return w
}

// SortBy sets spec.sortBy.
func (w *PlacementWrapper) SortBy(s clusterv1beta1.PlacementSortByType) *PlacementWrapper {
	w.Spec.SortBy = s
	return w
}

// Named renames the placement (handy with Clone).
func (w *PlacementWrapper) Named(name string) *PlacementWrapper {
	w.Placement.Name = name
	return w
}

// UID sets the placement's UID.
func (w *PlacementWrapper) UID(uid string) *PlacementWrapper {
	w.Placement.UID = types.UID(uid)
	return w
}

// Generation sets the placement's generation.
func (w *PlacementWrapper) Generation(g int64) *PlacementWrapper {
	w.Placement.Generation = g
	return w
}

// PredicateClaims adds a predicate with a claim selector made of the given requirements.
func (w *PlacementWrapper) PredicateClaims(reqs ...metav1.LabelSelectorRequirement) *PlacementWrapper {
	return w.Predicate(clusterv1beta1.ClusterSelector{ClaimSelector: clusterv1beta1.ClusterClaimSelector{MatchExpressions: reqs}})
}

// MakeToleration returns a toleration; seconds, when given, sets tolerationSeconds.
func MakeToleration(key string, op clusterv1beta1.TolerationOperator, value string, effect clusterv1.TaintEffect, seconds ...int64) clusterv1beta1.Toleration {
	t := clusterv1beta1.Toleration{Key: key, Operator: op, Value: value, Effect: effect}
	if len(seconds) > 0 {
		s := seconds[0]
		t.TolerationSeconds = &s
	}
	return t
}
