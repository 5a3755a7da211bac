package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// deployment is the workload of an intent: one replica of one container.
func deployment(name string) *appsv1.Deployment {
	l := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// createWorkload creates an intent whose one replica needs cpu on one node and delivers a
// Deployment, and its Placement of one cluster out of the cluster set, both named name. What
// exists already is kept, so that a creation cut short can be tried again.
func (e *env) createWorkload(ctx context.Context, name, cpu string) error {
	in := ut.MakeHPAIntent(name, e.ns).Placement(name).Consumer(
		ut.MakeConsumer("app").Target("Deployment", name, "main").Replicas(1).Requirement(
			ut.MakeResource("cpu", "cpu").Requests(cpu).Obj(),
		).Obj(),
	).Manifest(deployment(name)).Obj()
	if _, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Create(ctx, in, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating HPAIntent %s: %w", name, err)
	}
	// Steady and HardwareFit only: OCM's default Balance would move placements between
	// clusters on any new cycle (it evens the count of placements per cluster), and these tests
	// watch for decisions that change while nothing about the workloads does.
	p := ut.MakePlacement(name, e.ns).NumberOfClusters(1).Mode(clusterv1beta1.PrioritizerPolicyModeExact).
		BuiltIn("Steady", 1).BuiltIn("HardwareFit", 1).Obj()
	if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Placement %s: %w", name, err)
	}
	return nil
}

// createWorkloadsSeen creates workloads as createWorkloads does, but each Placement only once
// the hub has validated its intent. A Placement the hub sees before its HPAIntent (the two
// come through different watches) is scheduled for a moment as a plain Placement, which may
// decide a cluster with a stale inventory until the intent arrives and HardwareFit takes the
// cluster away again; tests that assert that no such decision is ever made avoid that window.
func (e *env) createWorkloadsSeen(prefix string, from, to int, cpu string) {
	e.t.Helper()
	for i := from; i < to; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		in := ut.MakeHPAIntent(name, e.ns).Placement(name).Consumer(
			ut.MakeConsumer("app").Target("Deployment", name, "main").Replicas(1).Requirement(
				ut.MakeResource("cpu", "cpu").Requests(cpu).Obj(),
			).Obj(),
		).Manifest(deployment(name)).Obj()
		if _, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Create(e.t.Context(), in, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
		framework.Eventually(e.t, func(ctx context.Context) error {
			got, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if meta.FindStatusCondition(got.Status.Conditions, "Valid") == nil {
				return fmt.Errorf("expected the hub to validate HPAIntent %s, saw no Valid condition", name)
			}
			return nil
		})
		if err := e.createWorkload(e.t.Context(), name, cpu); err != nil {
			e.t.Fatal(err)
		}
	}
}

// createWorkloads creates the workloads name-0 … name-(n-1) in order, from index from.
func (e *env) createWorkloads(prefix string, from, to int, cpu string) {
	e.t.Helper()
	for i := from; i < to; i++ {
		if err := e.createWorkload(e.t.Context(), fmt.Sprintf("%s-%d", prefix, i), cpu); err != nil {
			e.t.Fatal(err)
		}
	}
}

// placementState is what a placement has: its decided clusters (sorted) and whether it is
// Satisfied.
type placementState struct {
	Clusters  []string
	Satisfied bool
}

// placements returns the state of every placement of the test, by name.
func (e *env) placements(ctx context.Context) (map[string]placementState, error) {
	ps, err := e.clusters.ClusterV1beta1().Placements(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	ds, err := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]placementState{}
	for _, p := range ps.Items {
		out[p.Name] = placementState{Satisfied: meta.IsStatusConditionTrue(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied)}
	}
	for _, d := range ds.Items {
		name := d.Labels[clusterv1beta1.PlacementLabel]
		st := out[name]
		for _, cd := range d.Status.Decisions {
			st.Clusters = append(st.Clusters, cd.ClusterName)
		}
		slices.Sort(st.Clusters)
		out[name] = st
	}
	return out, nil
}

// decisionObjects returns every PlacementDecision of the test: name → its decisions'
// clusters, in the order the object lists them.
func (e *env) decisionObjects(ctx context.Context) (map[string][]string, error) {
	ds, err := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, d := range ds.Items {
		cs := []string{}
		for _, cd := range d.Status.Decisions {
			cs = append(cs, cd.ClusterName)
		}
		out[d.Name] = cs
	}
	return out, nil
}

// deliveries returns, by intent name, the clusters holding a ManifestWork of the intent,
// sorted.
func (e *env) deliveries(ctx context.Context) (map[string][]string, error) {
	list, err := e.works.WorkV1().ManifestWorks(metav1.NamespaceAll).List(ctx, e.worksOfTest())
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, w := range list.Items {
		name := w.Labels[fleetfitv1alpha1.LabelIntentName]
		out[name] = append(out[name], w.Namespace)
	}
	for _, cs := range out {
		slices.Sort(cs)
	}
	return out, nil
}

// checkConverged returns nil when every named placement is Satisfied with exactly one cluster
// and the intent of the same name has a ManifestWork on exactly its decided clusters.
func (e *env) checkConverged(ctx context.Context, names []string) error {
	ps, err := e.placements(ctx)
	if err != nil {
		return err
	}
	works, err := e.deliveries(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		st := ps[name]
		switch {
		case !st.Satisfied || len(st.Clusters) != 1:
			errs = append(errs, fmt.Errorf("placement %s: Satisfied=%v on %v, want Satisfied on one cluster", name, st.Satisfied, st.Clusters))
		case !slices.Equal(works[name], st.Clusters):
			errs = append(errs, fmt.Errorf("intent %s: ManifestWorks on %v, decisions on %v, want the same clusters", name, works[name], st.Clusters))
		}
	}
	return summarise(errs)
}

// summarise joins the first few errors and counts the rest, to keep failure messages short.
func summarise(errs []error) error {
	const shown = 5
	if len(errs) <= shown {
		return errors.Join(errs...)
	}
	return fmt.Errorf("%w\n… and %d more", errors.Join(errs[:shown]...), len(errs)-shown)
}

// names returns prefix-from … prefix-(to-1).
func names(prefix string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}
