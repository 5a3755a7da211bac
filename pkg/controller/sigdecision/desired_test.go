package sigdecision

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	sigv1alpha1 "sigs.k8s.io/cluster-inventory-api/apis/v1alpha1"
)

func ocmDecision(labels map[string]string, clusters ...clusterv1beta1.ClusterDecision) *clusterv1beta1.PlacementDecision {
	return &clusterv1beta1.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-decision-2", UID: "uid-1", Labels: labels},
		Status:     clusterv1beta1.PlacementDecisionStatus{Decisions: clusters},
	}
}

func TestDesired(t *testing.T) {
	owner := metav1.OwnerReference{
		APIVersion: "cluster.open-cluster-management.io/v1beta1", Kind: "PlacementDecision",
		Name: "web-decision-2", UID: "uid-1", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
	for _, tc := range []struct {
		name string
		in   *clusterv1beta1.PlacementDecision
		want *sigv1alpha1.PlacementDecision
	}{{
		name: "placement and group labels become the SIG keys; clusters keep their order and reason",
		in: ocmDecision(map[string]string{
			clusterv1beta1.PlacementLabel:          "web",
			clusterv1beta1.DecisionGroupIndexLabel: "1",
			clusterv1beta1.DecisionGroupNameLabel:  "canary",
		},
			clusterv1beta1.ClusterDecision{ClusterName: "c2", Reason: "best fit"},
			clusterv1beta1.ClusterDecision{ClusterName: "c1"},
		),
		want: &sigv1alpha1.PlacementDecision{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-decision-2", OwnerReferences: []metav1.OwnerReference{owner},
				Labels: map[string]string{
					"x-k8s.io/cluster-manager":             "open-cluster-management",
					"multicluster.x-k8s.io/placement-key":  "web",
					"multicluster.x-k8s.io/decision-key":   "web",
					"multicluster.x-k8s.io/decision-index": "1",
				}},
			Decisions: []sigv1alpha1.ClusterDecision{
				{ClusterProfileRef: sigv1alpha1.ClusterProfileReference{Name: "c2", Namespace: "apps"}, Reason: "best fit"},
				{ClusterProfileRef: sigv1alpha1.ClusterProfileReference{Name: "c1", Namespace: "apps"}},
			},
			SchedulerName: "open-cluster-management",
		},
	}, {
		name: "an unlabelled, empty decision gets the cluster-manager label and an empty list",
		in:   ocmDecision(nil),
		want: &sigv1alpha1.PlacementDecision{
			ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-decision-2", OwnerReferences: []metav1.OwnerReference{owner},
				Labels: map[string]string{"x-k8s.io/cluster-manager": "open-cluster-management"}},
			Decisions:     []sigv1alpha1.ClusterDecision{},
			SchedulerName: "open-cluster-management",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Desired(tc.in)); diff != "" {
				t.Errorf("Desired (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	desired := Desired(ocmDecision(map[string]string{clusterv1beta1.PlacementLabel: "web"},
		clusterv1beta1.ClusterDecision{ClusterName: "c1"}))
	stored := func(mutate func(*sigv1alpha1.PlacementDecision)) *sigv1alpha1.PlacementDecision {
		d := desired.DeepCopy()
		d.ResourceVersion = "7"
		mutate(d)
		return d
	}
	for _, tc := range []struct {
		name       string
		existing   *sigv1alpha1.PlacementDecision
		wantUpdate bool
		wantLabels map[string]string
	}{{
		name:     "equal: nothing to write",
		existing: stored(func(*sigv1alpha1.PlacementDecision) {}),
	}, {
		name:       "decisions missing",
		existing:   stored(func(d *sigv1alpha1.PlacementDecision) { d.Decisions = nil }),
		wantUpdate: true,
		wantLabels: desired.Labels,
	}, {
		name: "someone else's label is kept, a stale owned one removed",
		existing: stored(func(d *sigv1alpha1.PlacementDecision) {
			d.Labels["team"] = "a"
			d.Labels[sigv1alpha1.DecisionIndexLabel] = "3"
		}),
		wantUpdate: true,
		wantLabels: map[string]string{
			"team":                                "a",
			"x-k8s.io/cluster-manager":            "open-cluster-management",
			"multicluster.x-k8s.io/placement-key": "web",
			"multicluster.x-k8s.io/decision-key":  "web",
		},
	}, {
		name:       "changed clusters",
		existing:   stored(func(d *sigv1alpha1.PlacementDecision) { d.Decisions[0].ClusterProfileRef.Name = "c9" }),
		wantUpdate: true,
		wantLabels: desired.Labels,
	}, {
		name:       "an owner of a recreated OCM object",
		existing:   stored(func(d *sigv1alpha1.PlacementDecision) { d.OwnerReferences[0].UID = "old" }),
		wantUpdate: true,
		wantLabels: desired.Labels,
	}, {
		name:       "another scheduler name",
		existing:   stored(func(d *sigv1alpha1.PlacementDecision) { d.SchedulerName = "other" }),
		wantUpdate: true,
		wantLabels: desired.Labels,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(tc.existing, desired)
			if (got != nil) != tc.wantUpdate {
				t.Fatalf("Merge wants an update: %v, want %v", got != nil, tc.wantUpdate)
			}
			if got == nil {
				return
			}
			if diff := cmp.Diff(tc.wantLabels, got.Labels); diff != "" {
				t.Errorf("labels (-want,+got):\n%s", diff)
			}
			if got.ResourceVersion != "7" {
				t.Errorf("resourceVersion %q, want the stored one kept for the update", got.ResourceVersion)
			}
			if diff := cmp.Diff(desired.Decisions, got.Decisions); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s", diff)
			}
			if got.SchedulerName != ClusterManager || !cmp.Equal(got.OwnerReferences, desired.OwnerReferences) {
				t.Errorf("schedulerName %q, owners %v; want %q, %v", got.SchedulerName, got.OwnerReferences, ClusterManager, desired.OwnerReferences)
			}
		})
	}
	t.Run("an absent and an empty decision list are equal", func(t *testing.T) {
		empty := Desired(ocmDecision(nil))
		existing := empty.DeepCopy()
		existing.Decisions = nil
		if got := Merge(existing, empty); got != nil {
			t.Errorf("Merge wants to write %+v", got)
		}
	})
}

func TestServes(t *testing.T) {
	crd := func(established apiextensionsv1.ConditionStatus, version string, served, deleting bool) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: CRDName},
			Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: version, Served: served}}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
				{Type: apiextensionsv1.Established, Status: established},
			}},
		}
		if deleting {
			c.DeletionTimestamp = ptr.To(metav1.Now())
		}
		return c
	}
	for _, tc := range []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		want bool
	}{
		{"established, v1alpha1 served", crd(apiextensionsv1.ConditionTrue, "v1alpha1", true, false), true},
		{"not established yet", crd(apiextensionsv1.ConditionFalse, "v1alpha1", true, false), false},
		{"v1alpha1 not served", crd(apiextensionsv1.ConditionTrue, "v1alpha1", false, false), false},
		{"only another version", crd(apiextensionsv1.ConditionTrue, "v1beta1", true, false), false},
		{"being deleted", crd(apiextensionsv1.ConditionTrue, "v1alpha1", true, true), false},
	} {
		if got := Serves(tc.crd); got != tc.want {
			t.Errorf("%s: Serves = %v, want %v", tc.name, got, tc.want)
		}
	}
}
