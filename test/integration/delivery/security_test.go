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
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/action"
	"github.com/fleetfit/fleetfit/pkg/controller/hpaintent"
	"github.com/fleetfit/fleetfit/pkg/delivery"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestIntentAuthorGetsNoMoreThanTheNamespace: an HPAIntent author may deliver a workload into
// the intent's namespace of the chosen cluster, and nothing more. An intent carrying a
// ClusterRoleBinding or a Pod in kube-system is refused by the hub (Valid=False, nothing
// delivered); an allowed Deployment is applied by OCM's work agent as the namespace's executor
// ServiceAccount; and where the hub's admin lets intents deliver a kind (Role) that the
// managed cluster's admin did not grant the executor, the work agent refuses to apply it.
func TestIntentAuthorGetsNoMoreThanTheNamespace(t *testing.T) {
	const secure = "secure"
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	works := workclient.NewForConfigOrDie(hub.AdminConfig())
	intents := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(secure)
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	spoke := fleet.Spokes[0]
	if err := framework.CreateNode(ctx, spoke.AdminClient(), ut.MakeNode("secure-0").Resource("cpu", "16").Resource("memory", "64Gi").Obj()); err != nil {
		t.Fatal(err)
	}
	if err := framework.ApplyAgentRBAC(ctx, hub, spoke, "cluster1"); err != nil {
		t.Fatal(err)
	}
	if err := framework.GrantDelivery(ctx, spoke, secure); err != nil {
		t.Fatal(err)
	}
	agentCtx, cancel := context.WithCancel(ctx)
	done, err := framework.StartAgent(agentCtx, hub, spoke, "cluster1", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	w, err := framework.StartOCMWorkAgent(ctx, hub, spoke, "cluster1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		w.Stop()
		if t.Failed() {
			t.Logf("work agent of cluster1:\n%s", w.LogTail(30))
		}
	})
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secure}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet("default"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(secure).Create(ctx, ut.MakeClusterSetBinding(secure, "default"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The hub's admin lets intents deliver Roles too; cluster1's admin granted the executor
	// only the workload kinds (fleetfit install agent --delivery-namespace secure).
	framework.RunHub(t, hub.AdminConfig(), "--delivery-allowed-kinds=apps/Deployment,Namespace,Pod,rbac.authorization.k8s.io/Role")

	create := func(name string, manifests ...any) {
		t.Helper()
		p := ut.MakePlacement(name, secure).NumberOfClusters(1).PredicateLabels(map[string]string{"name": "cluster1"}).Obj()
		if _, err := clusters.ClusterV1beta1().Placements(secure).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		in := ut.MakeHPAIntent(name, secure).Placement(name).Consumer(
			ut.MakeConsumer("web").Target("Deployment", "web", container).Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
		).Manifest(webDeployment())
		for _, m := range manifests {
			in.Manifest(m)
		}
		if _, err := intents.Create(ctx, in.Obj(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	object := func(apiVersion, kind, namespace, name string, extra map[string]any) map[string]any {
		o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": namespace}}
		for k, v := range extra {
			o[k] = v
		}
		if namespace == "" {
			delete(o["metadata"].(map[string]any), "namespace")
		}
		return o
	}
	refused := func(name, wantInMessage string) {
		t.Helper()
		framework.Eventually(t, func(ctx context.Context) error {
			in, err := intents.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionValid)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != hpaintent.ReasonManifestNotAllowed || !strings.Contains(c.Message, wantInMessage) {
				return fmt.Errorf("expected Valid=False %s mentioning %q, saw %+v", hpaintent.ReasonManifestNotAllowed, wantInMessage, c)
			}
			return nil
		})
	}

	// 1. Cluster-admin through a ClusterRoleBinding, or a Pod in kube-system: refused.
	create("crb", object("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "", "steal-admin", map[string]any{
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
		"subjects": []any{map[string]any{"kind": "User", "name": "mallory", "apiGroup": "rbac.authorization.k8s.io"}},
	}))
	refused("crb", "ClusterRoleBinding steal-admin")
	create("system-pod", object("v1", "Pod", "kube-system", "sneaky", map[string]any{
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "registry.k8s.io/pause:3.10"}}},
	}))
	refused("system-pod", "namespace kube-system")

	// 2. An allowed Deployment is applied, as the executor.
	create("allowed")
	framework.Eventually(t, func(ctx context.Context) error {
		mw, err := works.WorkV1().ManifestWorks("cluster1").Get(ctx, secure+".allowed", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if mw.Spec.Executor == nil || mw.Spec.Executor.Subject.ServiceAccount == nil ||
			*mw.Spec.Executor.Subject.ServiceAccount != *delivery.Executor(secure).Subject.ServiceAccount {
			return fmt.Errorf("expected the ManifestWork to run as %s/%s, saw executor %+v", secure, delivery.ExecutorServiceAccount, mw.Spec.Executor)
		}
		if _, err := spoke.AdminClient().AppsV1().Deployments(secure).Get(ctx, "web", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("expected the Deployment on cluster1: %w", err)
		}
		return nil
	})

	// 3. A Role the hub allows but cluster1 never granted the executor: not applied.
	create("role", object("rbac.authorization.k8s.io/v1", "Role", secure, "more-rights", map[string]any{
		"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get"}}},
	}))
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, "role", metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionDelivered)
		if c == nil || c.Status != metav1.ConditionFalse || len(in.Status.Clusters) != 1 || in.Status.Clusters[0].State != v1alpha1.DeliveryFailed {
			return fmt.Errorf("expected Delivered=False with cluster1 Failed, saw %+v and clusters %+v", c, in.Status.Clusters)
		}
		return nil
	})
	if _, err := spoke.AdminClient().RbacV1().Roles(secure).Get(ctx, "more-rights", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("expected no Role more-rights on cluster1, the executor may not create Roles (err %v)", err)
	}

	// Nothing of the refused intents ever reached the hub's cluster namespaces.
	for _, name := range []string{"crb", "system-pod"} {
		if _, err := works.WorkV1().ManifestWorks("cluster1").Get(ctx, action.WorkName(ut.MakeHPAIntent(name, secure).Obj()), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("expected no ManifestWork for the refused intent %s (err %v)", name, err)
		}
	}
	if _, err := spoke.AdminClient().RbacV1().ClusterRoleBindings().Get(ctx, "steal-admin", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("expected no ClusterRoleBinding steal-admin on cluster1 (err %v)", err)
	}
}
