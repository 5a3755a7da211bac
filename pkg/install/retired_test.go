package install

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestRemoveRetiredAgentAccess(t *testing.T) {
	ours := []metav1.ManagedFieldsEntry{{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationApply}}
	theirs := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	kube := fake.NewClientset(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fleetfit:agent:c1", ManagedFields: ours}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fleetfit:agent:c1", ManagedFields: ours}},
		// Someone else's object of the same name, and the role every agent shares.
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fleetfit:agent:c2", ManagedFields: theirs}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fleetfit:agent", ManagedFields: ours}},
	)
	ctx := t.Context()

	got, err := RemoveRetiredAgentAccess(ctx, kube, "c1", false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"clusterrolebinding.rbac.authorization.k8s.io/fleetfit:agent:c1 deleted",
		"clusterrole.rbac.authorization.k8s.io/fleetfit:agent:c1 deleted",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("deleted (-want,+got):\n%s", diff)
	}
	if _, err := kube.RbacV1().ClusterRoles().Get(ctx, "fleetfit:agent:c1", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("retired ClusterRole after removal: got %v, want NotFound", err)
	}

	// Nothing left to remove for c1; c2's role is not fleetfit's.
	for _, cluster := range []string{"c1", "c2"} {
		got, err := RemoveRetiredAgentAccess(ctx, kube, cluster, false)
		if err != nil || len(got) != 0 {
			t.Errorf("removing for %s: %v, %v; want nothing", cluster, got, err)
		}
	}
	for _, name := range []string{"fleetfit:agent:c2", "fleetfit:agent"} {
		if _, err := kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("ClusterRole %s: %v, want kept", name, err)
		}
	}
}
