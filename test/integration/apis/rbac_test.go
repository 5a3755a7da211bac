package apis

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestRestrictedIdentity checks that an identity granted only its own
// cluster's namespace can write there and nowhere else.
func TestRestrictedIdentity(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	admin := hub.AdminClient()

	own, other := "rbac-own", "rbac-other"
	for _, ns := range []string{own, other} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: clusterv1.ManagedClusterSpec{HubAcceptsClient: true}}
		if _, err := clusterclient.NewForConfigOrDie(hub.AdminConfig()).ClusterV1().ManagedClusters().Create(ctx, mc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "inventory-writer", Namespace: own},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{v1alpha1.GroupName},
			Resources: []string{"clusterinventories", "clusterinventories/status"},
			Verbs:     []string{"get", "list", "watch", "create", "update", "patch"},
		}},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "inventory-writer", Namespace: own},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "agent-" + own}},
	}
	if _, err := admin.RbacV1().Roles(own).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(own).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg, err := hub.UserConfig("agent-"+own, "fleetfit:agents")
	if err != nil {
		t.Fatal(err)
	}
	agent := fleetfitclient.NewForConfigOrDie(cfg)
	create := func(ctx context.Context, ns string) error {
		inv := &v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: "inventory", Namespace: ns}}
		_, err := agent.FleetfitV1alpha1().ClusterInventories(ns).Create(ctx, inv, metav1.CreateOptions{})
		return err
	}

	// RBAC bindings take effect asynchronously in the authorizer's cache.
	framework.Eventually(t, func(ctx context.Context) error { return create(ctx, own) })

	if err := create(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("creating an inventory in another cluster's namespace: got %v, want Forbidden", err)
	}
	intent := &v1alpha1.HPAIntent{ObjectMeta: metav1.ObjectMeta{Name: "sneaky", Namespace: own}}
	if _, err := agent.FleetfitV1alpha1().HPAIntents(own).Create(ctx, intent, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("creating an HPAIntent as the agent: got %v, want Forbidden", err)
	}
	mcs := clusterclient.NewForConfigOrDie(cfg).ClusterV1().ManagedClusters()
	if _, err := mcs.Get(ctx, own, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading a ManagedCluster without a grant: got %v, want Forbidden", err)
	}
}
