package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestPredicates checks each kind of cluster selector of spec.predicates as OCM documents it:
// labels, claims (status.clusterClaims) and CEL over the ManagedCluster (including scores()
// over AddOnPlacementScores); ANDed inside one predicate and ORed across predicates.
func TestPredicates(t *testing.T) {
	e := newEnv(t, "predicates")
	e.createCluster(e.cluster("a").Label("env", "prod").Claim("region.open-cluster-management.io", "us-east-1").KubeVersion("v1.30.2"))
	e.createCluster(e.cluster("b").Label("env", "dev").Claim("region.open-cluster-management.io", "eu-west-1").KubeVersion("v1.28.9"))
	e.createCluster(e.cluster("c").Label("env", "dev").Label("gpu", "true").KubeVersion("v1.31.0"))
	e.createScore(utiltesting.MakeScore(e.set+"-b", "resource-usage", nil, map[string]int32{"cpuAvailable": 80, "memAvailable": 10}))
	e.createScore(utiltesting.MakeScore(e.set+"-c", "resource-usage", nil, map[string]int32{"cpuAvailable": 20, "memAvailable": 90}))
	e.startHub()

	tests := map[string]struct {
		placement *utiltesting.PlacementWrapper
		want      []string
	}{
		"labels": {
			placement: utiltesting.MakePlacement("labels", e.ns).PredicateLabels(map[string]string{"env": "dev"}),
			want:      e.names("b", "c"),
		},
		"label expression": {
			placement: utiltesting.MakePlacement("label-expression", e.ns).Predicate(clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "gpu", Operator: metav1.LabelSelectorOpDoesNotExist},
				}},
			}),
			want: e.names("a", "b"),
		},
		"claims": {
			placement: utiltesting.MakePlacement("claims", e.ns).PredicateClaims(metav1.LabelSelectorRequirement{
				Key: "region.open-cluster-management.io", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu-west-1", "ap-south-1"},
			}),
			want: e.names("b"),
		},
		"claim exists": {
			placement: utiltesting.MakePlacement("claim-exists", e.ns).PredicateClaims(metav1.LabelSelectorRequirement{
				Key: "region.open-cluster-management.io", Operator: metav1.LabelSelectorOpExists,
			}),
			want: e.names("a", "b"),
		},
		"labels and claims in one predicate are ANDed": {
			placement: utiltesting.MakePlacement("anded", e.ns).Predicate(clusterv1beta1.ClusterSelector{
				LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}},
				ClaimSelector: clusterv1beta1.ClusterClaimSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "region.open-cluster-management.io", Operator: metav1.LabelSelectorOpExists},
				}},
			}),
			want: e.names("b"),
		},
		"predicates are ORed": {
			placement: utiltesting.MakePlacement("ored", e.ns).
				PredicateLabels(map[string]string{"env": "prod"}).
				PredicateClaims(metav1.LabelSelectorRequirement{
					Key: "region.open-cluster-management.io", Operator: metav1.LabelSelectorOpIn, Values: []string{"eu-west-1"},
				}),
			want: e.names("a", "b"),
		},
		"CEL on labels": {
			placement: utiltesting.MakePlacement("cel-labels", e.ns).PredicateCEL(`managedCluster.metadata.labels["env"] == "dev"`),
			want:      e.names("b", "c"),
		},
		"CEL on the Kubernetes version": {
			placement: utiltesting.MakePlacement("cel-version", e.ns).
				PredicateCEL(`managedCluster.status.version.kubernetes.startsWith("v1.3")`),
			want: e.names("a", "c"),
		},
		"CEL expressions of one predicate are ANDed": {
			placement: utiltesting.MakePlacement("cel-anded", e.ns).PredicateCEL(
				`managedCluster.metadata.labels["env"] == "dev"`,
				`managedCluster.status.version.kubernetes == "v1.31.0"`,
			),
			want: e.names("c"),
		},
		"CEL with scores": {
			placement: utiltesting.MakePlacement("cel-scores", e.ns).PredicateCEL(
				`managedCluster.scores("resource-usage").exists(s, s.name == "cpuAvailable" && s.value > 50)`,
			),
			want: e.names("b"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := e.in(t)
			e.createPlacement(tc.placement)
			e.waitDecided(tc.placement.Name, tc.want...)
			e.waitCondition(tc.placement.Name, clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
		})
	}

	// A score that changes re-runs the placements whose CEL reads it.
	t.Run("CEL with a changed score", func(t *testing.T) {
		e := e.in(t)
		scores := e.clusters.ClusterV1alpha1().AddOnPlacementScores(e.set + "-c")
		updateWithRetry(t, func(ctx context.Context) (any, error) {
			s, err := scores.Get(ctx, "resource-usage", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			s.Status.Scores[0].Value, s.Status.Scores[1].Value = 60, 60
			return scores.UpdateStatus(ctx, s, metav1.UpdateOptions{})
		})
		e.waitDecided("cel-scores", e.names("b", "c")...)
	})

	// A predicate that matches nothing is OCM's NoManagedClusterMatched.
	t.Run("no match", func(t *testing.T) {
		e := e.in(t)
		e.createPlacement(utiltesting.MakePlacement("none", e.ns).PredicateLabels(map[string]string{"env": "staging"}))
		e.waitConditionMessage("none", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionFalse,
			"NoManagedClusterMatched", "No ManagedCluster matches any of the cluster predicate")
	})
}

// TestCELCompileErrorKeepsDecisions: a CEL expression that does not compile makes the
// placement Misconfigured with OCM's condition, and — unlike OCM, which wipes them — the
// decisions it had are kept.
func TestCELCompileErrorKeepsDecisions(t *testing.T) {
	e := newEnv(t, "predicates-celerror")
	e.createCluster(e.cluster("a").Label("env", "prod"))
	e.createCluster(e.cluster("b").Label("env", "dev"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns).PredicateCEL(`managedCluster.metadata.labels["env"] == "prod"`))
	e.waitDecided("p", e.names("a")...)
	e.waitCondition("p", clusterv1beta1.PlacementConditionMisconfigured, metav1.ConditionFalse, "Succeedconfigured")
	_, before, err := e.decided(t.Context(), "p")
	if err != nil {
		t.Fatal(err)
	}

	// Broken, and selecting b if it were not: a wrongly ignored predicate would show.
	e.updatePlacement("p", func(p *clusterv1beta1.Placement) {
		p.Spec.Predicates[0].RequiredClusterSelector.CelSelector.CelExpressions = []string{
			`managedCluster.metadata.labels["env"] == "dev" &&`,
		}
	})
	pl := e.waitCondition("p", clusterv1beta1.PlacementConditionMisconfigured, metav1.ConditionTrue, "Misconfigured")
	if c := meta.FindStatusCondition(pl.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured); !strings.Contains(c.Message, "compilation failed") {
		t.Errorf("Misconfigured message %q does not say the compilation failed", c.Message)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		evs, err := e.events(ctx, "p", "Misconfigured")
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return fmt.Errorf("no Misconfigured event")
		}
		return nil
	})

	_, after, err := e.decided(t.Context(), "p")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) || !slices.EqualFunc(before, after, func(a, b clusterv1beta1.PlacementDecision) bool {
		return a.Name == b.Name && a.ResourceVersion == b.ResourceVersion
	}) {
		t.Errorf("decisions changed on a misconfiguration: before %v, after %v", decisionSummary(before), decisionSummary(after))
	}
	if got := pl.Status.NumberOfSelectedClusters; got != 1 {
		t.Errorf("status.numberOfSelectedClusters = %d, want 1 (kept)", got)
	}

	// Fixing the expression schedules again and clears the condition.
	e.updatePlacement("p", func(p *clusterv1beta1.Placement) {
		p.Spec.Predicates[0].RequiredClusterSelector.CelSelector.CelExpressions = []string{`managedCluster.metadata.labels["env"] == "dev"`}
	})
	e.waitDecided("p", e.names("b")...)
	e.waitCondition("p", clusterv1beta1.PlacementConditionMisconfigured, metav1.ConditionFalse, "Succeedconfigured")
}

func decisionSummary(ds []clusterv1beta1.PlacementDecision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s@%s%v", d.Name, d.ResourceVersion, decisionClusterNames(d.Status.Decisions)))
	}
	return out
}
