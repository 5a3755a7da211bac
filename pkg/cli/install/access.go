package install

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// AgentAccessOptions are the options of `fleetfit install agent-access`,
// which runs on the hub with rights to grant RBAC.
type AgentAccessOptions struct {
	Flags       *clientopts.Flags
	ClusterName string
	ApplyFlags
}

func newAgentAccessCommand(flags *clientopts.Flags) *cobra.Command {
	o := &AgentAccessOptions{Flags: flags}
	c := &cobra.Command{
		Use:   "agent-access",
		Short: "On the hub, let a managed cluster's fleetfit-agent report: RBAC for system:fleetfit:agent:<cluster>",
		Long: `Grant, on the hub of --kubeconfig/--context, what the fleetfit-agent of one managed cluster
needs to report there: the ClusterRole fleetfit:agent, bound to the user
system:fleetfit:agent:<cluster> in the cluster's namespace only, and the right to read its
own ManagedCluster and patch its status (deploy/agent). An agent can never write another
cluster's inventory or scores.

Run it once per managed cluster with the hub's admin credentials, after OCM accepted the
cluster (its namespace on the hub must exist), or let 'fleetfit install agent' run it with
--hub-admin-kubeconfig.`,
		Example: `  fleetfit install agent-access --cluster-name cluster1 --kubeconfig hub-admin.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE:    runE(o),
	}
	c.Flags().StringVar(&o.ClusterName, "cluster-name", "", "the managed cluster's name on the hub")
	o.addFlags(c.Flags())
	return c
}

// Complete has nothing to fill in.
func (o *AgentAccessOptions) Complete() error { return nil }

// Validate checks the flags.
func (o *AgentAccessOptions) Validate() error {
	return validateClusterNameFlag(o.ClusterName)
}

// Run checks that the cluster is known to the hub and applies the agent's
// hub RBAC.
func (o *AgentAccessOptions) Run(ctx context.Context, out, errOut io.Writer) error {
	cfg, err := o.Flags.RESTConfig()
	if err != nil {
		return err
	}
	return o.run(ctx, cfg, out, errOut)
}

func (o *AgentAccessOptions) run(ctx context.Context, cfg *rest.Config, out, errOut io.Writer) error {
	objs, err := install.AgentAccessObjects(o.ClusterName)
	if err != nil {
		return err
	}
	warnings, err := checkClusterOnHub(ctx, cfg, o.ClusterName)
	if err != nil {
		return err
	}
	warn(errOut, warnings...)
	a, err := install.NewApplier(cfg)
	if err != nil {
		return err
	}
	return applyObjects(ctx, out, a, objs, o.ApplyFlags)
}

// checkClusterOnHub fails when the cluster's namespace, where the agent's
// binding goes, is missing on the hub, and warns when its ManagedCluster is.
func checkClusterOnHub(ctx context.Context, cfg *rest.Config, cluster string) (warnings []string, err error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, err = kube.CoreV1().Namespaces().Get(ctx, cluster, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("the hub at %s has no namespace %s, where the agent of %s reports: OCM creates it when the hub accepts the cluster (clusteradm accept --clusters %s)",
			cfg.Host, cluster, cluster, cluster)
	case err != nil:
		return nil, fmt.Errorf("looking for namespace %s on the hub at %s: %w", cluster, cfg.Host, err)
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, err = clusters.ClusterV1().ManagedClusters().Get(ctx, cluster, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return []string{fmt.Sprintf("the hub at %s has no ManagedCluster %s: the agent reports, but nothing is scheduled to %s until it is registered with OCM", cfg.Host, cluster, cluster)}, nil
	case err != nil:
		return nil, fmt.Errorf("looking for ManagedCluster %s on the hub at %s: %w", cluster, cfg.Host, err)
	}
	return nil, nil
}

func validateClusterNameFlag(name string) error {
	if name == "" {
		return errors.New("--cluster-name is required: the managed cluster's name on the hub")
	}
	if err := install.ValidateClusterName(name); err != nil {
		return fmt.Errorf("--cluster-name: %w", err)
	}
	return nil
}

// accessHint says how to grant the agent of cluster its hub access.
func accessHint(cluster string) string {
	return fmt.Sprintf(`The hub must let %s report for cluster %s. With the hub's admin credentials, run once:
  fleetfit install agent-access --cluster-name %s --kubeconfig <hub admin kubeconfig>
or run this command again with --hub-admin-kubeconfig.`, deployagent.AgentUser(cluster), cluster, cluster)
}
