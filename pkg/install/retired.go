package install

import (
	"context"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// RetiredAgentClusterAccess names the per-cluster ClusterRole and
// ClusterRoleBinding that fleetfit's installers used to grant an agent on the
// hub, so that it could patch its own ManagedCluster's status. The agent no
// longer writes there (that status belongs to OCM's registration agent), and
// its identity must hold nothing cluster-scoped, so they are removed.
func RetiredAgentClusterAccess(cluster string) string {
	return "fleetfit:agent:" + cluster
}

// RemoveRetiredAgentAccess deletes the ClusterRole and ClusterRoleBinding of
// RetiredAgentClusterAccess when fleetfit created them (their fields are
// managed by FieldManager); one that someone else made under the same name is
// left alone. It returns a kubectl-like line per object deleted.
func RemoveRetiredAgentAccess(ctx context.Context, kube kubernetes.Interface, cluster string, dryRun bool) ([]string, error) {
	name := RetiredAgentClusterAccess(cluster)
	opts := metav1.DeleteOptions{}
	suffix := "deleted"
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
		suffix = "deleted (server dry run)"
	}
	var done []string
	binding, err := kube.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return done, fmt.Errorf("looking for the retired ClusterRoleBinding %s: %w", name, err)
	case installedByFleetfit(binding.ManagedFields):
		if err := deleteIgnoringNotFound(kube.RbacV1().ClusterRoleBindings().Delete(ctx, name, opts)); err != nil {
			return done, fmt.Errorf("deleting the retired ClusterRoleBinding %s: %w", name, err)
		}
		done = append(done, fmt.Sprintf("clusterrolebinding.%s/%s %s", rbacv1.GroupName, name, suffix))
	}
	role, err := kube.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return done, fmt.Errorf("looking for the retired ClusterRole %s: %w", name, err)
	case installedByFleetfit(role.ManagedFields):
		if err := deleteIgnoringNotFound(kube.RbacV1().ClusterRoles().Delete(ctx, name, opts)); err != nil {
			return done, fmt.Errorf("deleting the retired ClusterRole %s: %w", name, err)
		}
		done = append(done, fmt.Sprintf("clusterrole.%s/%s %s", rbacv1.GroupName, name, suffix))
	}
	return done, nil
}

func installedByFleetfit(fields []metav1.ManagedFieldsEntry) bool {
	return slices.ContainsFunc(fields, func(f metav1.ManagedFieldsEntry) bool { return f.Manager == FieldManager })
}

func deleteIgnoringNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
