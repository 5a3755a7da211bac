package delivery

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/action"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestMoveMakesBeforeItBreaks: when the workload moves away from cluster1 (a move in the
// intent's status, then decisions on cluster2), cluster1 keeps its ManifestWork while the
// workload is not available on cluster2, and loses it, with the move completed, once it is.
// No work agent runs: the test reports the ManifestWorks' status as OCM's work agent would.
func TestMoveMakesBeforeItBreaks(t *testing.T) {
	const moving = "moving"
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	works := workclient.NewForConfigOrDie(hub.AdminConfig()).WorkV1()
	intents := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(moving)
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	for i, spoke := range fleet.Spokes {
		name := framework.SpokeName(i)
		node := ut.MakeNode("moving-"+name).Resource("cpu", "16").Resource("memory", "64Gi").Label(osLabel, "linux").Obj()
		if err := framework.CreateNode(ctx, spoke.AdminClient(), node); err != nil {
			t.Fatal(err)
		}
		if err := framework.ApplyAgentRBAC(ctx, hub, spoke, name); err != nil {
			t.Fatal(err)
		}
		agentCtx, cancel := context.WithCancel(ctx)
		done, err := framework.StartAgent(agentCtx, hub, spoke, name, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cancel(); <-done })
	}
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: moving}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet("default"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(moving).Create(ctx, ut.MakeClusterSetBinding(moving, "default"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pinned := func(cluster string) *ut.PlacementWrapper {
		return ut.MakePlacement("web", moving).NumberOfClusters(1).PredicateLabels(map[string]string{"name": cluster})
	}
	if _, err := clusters.ClusterV1beta1().Placements(moving).Create(ctx, pinned("cluster1").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	intent := ut.MakeHPAIntent("web", moving).Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", container).Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
	).Manifest(webDeployment()).Obj()
	if _, err := intents.Create(ctx, intent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.RunHub(t, hub.AdminConfig())
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if in, err := intents.Get(context.Background(), "web", metav1.GetOptions{}); err == nil {
			t.Logf("intent status: %+v", in.Status)
		}
	})
	name := action.WorkName(intent)

	// Delivered to cluster1, where the work agent reports it running.
	framework.Eventually(t, func(ctx context.Context) error {
		return reportWork(ctx, works, "cluster1", name, 2)
	})
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(in.Status.Conditions, v1alpha1.ConditionDelivered) {
			return fmt.Errorf("conditions %+v, want Delivered=True", in.Status.Conditions)
		}
		return nil
	})

	// The hub moves the workload away from cluster1: the move first, then the decisions.
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		in.Status.Moves = append(in.Status.Moves, v1alpha1.ClusterMove{From: "cluster1", Time: now, Failures: 1,
			BackoffUntil: metav1.NewTime(now.Add(10 * time.Minute)), Reason: "2 pods unschedulable for 6m"})
		_, err = intents.UpdateStatus(ctx, in, metav1.UpdateOptions{})
		return err
	})
	framework.Eventually(t, func(ctx context.Context) error {
		p, err := clusters.ClusterV1beta1().Placements(moving).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.Predicates = pinned("cluster2").Obj().Spec.Predicates
		_, err = clusters.ClusterV1beta1().Placements(moving).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})

	// cluster2 gets its ManifestWork; cluster1 keeps its own while cluster2's is not available,
	// and the intent says so.
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := works.ManifestWorks("cluster2").Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, d := range in.Status.Clusters {
			if d.ClusterName == "cluster1" && strings.HasPrefix(d.Message, "moving away: kept until the workload is available on cluster2") {
				return nil
			}
		}
		return fmt.Errorf("status.clusters %+v, want cluster1 kept while moving away", in.Status.Clusters)
	})
	framework.Consistently(t, 3*time.Second, func(ctx context.Context) error {
		if _, err := works.ManifestWorks("cluster1").Get(ctx, name, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("cluster1's ManifestWork while cluster2's is not available: %w", err)
		}
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(in.Status.Moves) != 1 || in.Status.Moves[0].Completed != nil {
			return fmt.Errorf("status.moves %+v, want the move in progress", in.Status.Moves)
		}
		return nil
	})

	// The workload runs on cluster2: cluster1's ManifestWork goes and the move completes.
	framework.Eventually(t, func(ctx context.Context) error {
		return reportWork(ctx, works, "cluster2", name, 2)
	})
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := works.ManifestWorks("cluster1").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster1 still has the ManifestWork (err %v)", err)
		}
		in, err := intents.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(in.Status.Moves) != 1 || in.Status.Moves[0].Completed == nil {
			return fmt.Errorf("status.moves %+v, want the move completed", in.Status.Moves)
		}
		if len(in.Status.Clusters) != 1 || in.Status.Clusters[0].ClusterName != "cluster2" {
			return fmt.Errorf("status.clusters %+v, want cluster2 alone", in.Status.Clusters)
		}
		return nil
	})

	if err := intents.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if _, err := intents.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("the intent is still there (err %v)", err)
		}
		return nil
	})
}

// reportWork writes the status OCM's work agent reports for the ManifestWork of a Deployment
// "web" with ready replicas of as many: applied, available, with its well-known feedback.
func reportWork(ctx context.Context, works workv1client.WorkV1Interface, cluster, name string, ready int64) error {
	w, err := works.ManifestWorks(cluster).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	for _, typ := range []string{workv1.WorkApplied, workv1.WorkAvailable} {
		meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: now})
	}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Ordinal: 1, Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: w.Labels[v1alpha1.LabelIntentNamespace], Name: "web"},
		StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			{Name: "Replicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(ready)}},
			{Name: "ReadyReplicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(ready)}},
			{Name: "AvailableReplicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(ready)}},
		}},
		Conditions: []metav1.Condition{{Type: workv1.ManifestAvailable, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: now}},
	}}
	_, err = works.ManifestWorks(cluster).UpdateStatus(ctx, w, metav1.UpdateOptions{})
	return err
}
