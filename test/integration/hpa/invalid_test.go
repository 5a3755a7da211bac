package hpa

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/hpaintent"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// webDeployment is the workload of the web intent: a Deployment web with one container app.
func webDeployment(ns string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptrTo[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1"}}},
			},
		},
	}
}

// TestInvalidIntentKeepsDecisions: an intent that turns invalid says why in its Valid
// condition, and its Placement keeps the decisions it had. cluster1's 2-cpu node cannot hold
// the consumer's 4 cpu; cluster2's 8-cpu node can.
func TestInvalidIntentKeepsDecisions(t *testing.T) {
	e := newEnv(t, "invalid")
	e.addNodes(0, node("inv-small", "2", "8Gi"))
	e.addNodes(1, node("inv-big", "8", "16Gi"))
	needs4 := utiltesting.MakeResource("cpu", "cpu").Requests("4").Obj()
	both := []string{cluster(0), cluster(1)}

	web := utiltesting.MakeHPAIntent("web", "").Placement("web").Consumer(
		utiltesting.MakeConsumer("web").Target("Deployment", "web", "app").Requirement(needs4).Obj(),
	).Manifest(webDeployment(e.ns))
	e.createIntent(web)
	e.createPlacement(onClusters("web", both...))
	e.createIntent(oneConsumer("moved", 1, needs4))
	e.createPlacement(onClusters("moved", both...))
	e.startHub(false)
	e.waitDecided("web", cluster(1))
	e.waitDecided("moved", cluster(1))
	e.waitIntent("web", hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"))

	t.Run("bad container", func(t *testing.T) {
		e := e.in(t)
		// The same update adds a feature no node has: were the placement rescheduled, it
		// would lose cluster2.
		e.updateIntent("web", func(in *v1alpha1.HPAIntent) {
			in.Spec.Consumers[0].Target.Container = "nope"
			in.Spec.Consumers[0].Requirements = append(in.Spec.Consumers[0].Requirements,
				utiltesting.MakeFeature("never", "fleetfit.io/never").Operator(corev1.NodeSelectorOpExists).Obj())
		})
		in := e.waitIntent("web", hasCondition(v1alpha1.ConditionValid, metav1.ConditionFalse, hpaintent.ReasonInvalidWorkload))
		want := `consumer "web": target Deployment web has no container "nope" (containers: app); set target.container to one of them`
		if msg := validMessage(in); msg != want {
			t.Errorf("Valid message %q, want %q", msg, want)
		}
		// The event comes from a cycle of the placement that saw the invalid intent.
		e.waitPlacementEvent("web", "HPAIntentInvalid")
		framework.Consistently(t, time.Second, e.decides("web", cluster(1)))

		// Fixed, the intent is scheduled again, with the new feature: nothing fits now.
		e.updateIntent("web", func(in *v1alpha1.HPAIntent) { in.Spec.Consumers[0].Target.Container = "app" })
		e.waitIntent("web", and(
			hasCondition(v1alpha1.ConditionValid, metav1.ConditionTrue, hpaintent.ReasonValid),
			hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "NoFeasibleCluster"),
		))
		e.waitDecided("web")
	})

	t.Run("missing placement", func(t *testing.T) {
		e := e.in(t)
		e.updateIntent("moved", func(in *v1alpha1.HPAIntent) { in.Spec.PlacementRef.Name = "movd" })
		in := e.waitIntent("moved", hasCondition(v1alpha1.ConditionValid, metav1.ConditionFalse, hpa.ReasonPlacementNotFound))
		want := fmt.Sprintf(`Placement "movd" not found in namespace %q: create it or fix spec.placementRef.name`, e.ns)
		if msg := validMessage(in); msg != want {
			t.Errorf("Valid message %q, want %q", msg, want)
		}
		// A cycle of the placement the intent was moved away from by a typo sees the broken
		// intent and keeps its decisions: it must not spread to cluster1, where the consumer
		// does not fit.
		e.waitPlacementEvent("moved", "HPAIntentInvalid")
		framework.Consistently(t, time.Second, e.decides("moved", cluster(1)))
	})

}

func validMessage(in *v1alpha1.HPAIntent) string {
	for _, c := range in.Status.Conditions {
		if c.Type == v1alpha1.ConditionValid {
			return c.Message
		}
	}
	return ""
}

// decides is a check that the placement decides exactly want.
func (e *env) decides(placement string, want ...string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		got, err := e.decided(ctx, placement)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("placement %s decides %v, want %v", placement, got, want)
		}
		return nil
	}
}

// in returns the env for a subtest.
func (e *env) in(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// waitPlacementEvent waits for an events.k8s.io Event about the placement with the reason.
func (e *env) waitPlacementEvent(placement, reason string) {
	e.t.Helper()
	e.eventually(func(ctx context.Context) error {
		list, err := fleet.Hub.AdminClient().EventsV1().Events(e.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, ev := range list.Items {
			if ev.Regarding.Kind == "Placement" && ev.Regarding.Name == placement && ev.Reason == reason {
				return nil
			}
		}
		return fmt.Errorf("no %s event about Placement %s yet", reason, placement)
	})
}

// resyncMarker is a cluster name no cluster has.
const resyncMarker = "resync-marker.invalid"

// resync makes the hub run one more cycle of the placement and waits until that cycle has
// written its decisions: it writes a cluster that does not exist into the placement's first
// decision, which the hub repairs (as OCM's controller does) in its next cycle. Only for a
// placement without invalid intents: with one, the hub leaves decisions alone.
func (e *env) resync(placement string) {
	e.t.Helper()
	name := placement + "-decision-1"
	decisions := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns)
	write := func(mutate func([]clusterv1beta1.ClusterDecision) []clusterv1beta1.ClusterDecision) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d, err := decisions.Get(e.t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Status.Decisions = mutate(d.Status.Decisions)
			_, err = decisions.UpdateStatus(e.t.Context(), d, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			e.t.Fatal(err)
		}
	}
	write(func(ds []clusterv1beta1.ClusterDecision) []clusterv1beta1.ClusterDecision {
		return append(ds, clusterv1beta1.ClusterDecision{ClusterName: resyncMarker})
	})
	e.eventually(func(ctx context.Context) error {
		d, err := decisions.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName == resyncMarker {
				return fmt.Errorf("the hub has not rewritten %s yet", name)
			}
		}
		return nil
	})
}

func ptrTo[T any](v T) *T { return &v }
