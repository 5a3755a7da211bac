package installcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
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
	// AgentKubeconfig, when set, is where to write a hub kubeconfig issued
	// for the agent, as Issue says.
	AgentKubeconfig string
	Issue           IssueFlags
	ApplyFlags
}

// IssueFlags tune the hub kubeconfig issued for an agent.
type IssueFlags struct {
	CertificateValidity time.Duration
	HubServer           string
}

func (f *IssueFlags) addFlags(fs *pflag.FlagSet, when string) {
	fs.DurationVar(&f.CertificateValidity, "certificate-validity", 0, when+"how long the certificate issued for the agent is valid (at least 10m; default: the hub signer's, usually a year)")
	fs.StringVar(&f.HubServer, "hub-server", "", when+"the hub's API server address as the managed cluster's pods reach it, written into the agent's kubeconfig (default: the hub kubeconfig's)")
}

// Validate checks the flags.
func (f IssueFlags) Validate() error {
	var errs []error
	if f.CertificateValidity != 0 && f.CertificateValidity < minCertificateValidity {
		errs = append(errs, fmt.Errorf("--certificate-validity must be at least %v, not %v", minCertificateValidity, f.CertificateValidity))
	}
	if f.HubServer != "" {
		if u, err := url.Parse(f.HubServer); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--hub-server %q is not an https:// URL", f.HubServer))
		}
	}
	return errors.Join(errs...)
}

func (f IssueFlags) options() install.IssueOptions {
	return install.IssueOptions{Validity: f.CertificateValidity, Server: f.HubServer}
}

func newAgentAccessCommand(flags *clientopts.Flags) *cobra.Command {
	o := &AgentAccessOptions{Flags: flags}
	c := &cobra.Command{
		Use:   "agent-access",
		Short: "On the hub, let a managed cluster's fleetfit-agent report: RBAC for system:fleetfit:agent:<cluster>",
		Long: `Grant, on the hub of --kubeconfig/--context, what the fleetfit-agent of one managed cluster
needs to report there: the ClusterRole fleetfit:agent, bound to the user
system:fleetfit:agent:<cluster> in the cluster's namespace only (deploy/agent), and nothing
cluster-scoped. An agent can never write another cluster's inventory or scores. The
ClusterRole and ClusterRoleBinding fleetfit:agent:<cluster> that earlier versions granted
(to patch the ManagedCluster's status, which is OCM's) are deleted.

With --agent-kubeconfig, it also issues the agent its identity: a client certificate for
system:fleetfit:agent:<cluster> from the hub's kubernetes.io/kube-apiserver-client signer
(the one OCM's registration uses for its own agents), approved here, written with the
hub's address and CA into a kubeconfig for 'fleetfit install agent --hub-kubeconfig'.

Run it once per managed cluster with the hub's admin credentials, after OCM accepted the
cluster (its namespace on the hub must exist), or let 'fleetfit install agent' run it with
--hub-admin-kubeconfig.`,
		Example: `  # Grant the access and issue the agent's hub kubeconfig
  fleetfit install agent-access --cluster-name cluster1 --kubeconfig hub.kubeconfig \
    --agent-kubeconfig cluster1-agent-hub.kubeconfig

  # Grant the access to an identity the agent already has
  fleetfit install agent-access --cluster-name cluster1 --context hub-admin`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	c.Flags().StringVar(&o.ClusterName, "cluster-name", "", "the managed cluster's name on the hub")
	c.Flags().StringVar(&o.AgentKubeconfig, "agent-kubeconfig", "", "write a hub kubeconfig with a certificate issued for the agent's identity to this new file")
	o.Issue.addFlags(c.Flags(), "with --agent-kubeconfig: ")
	o.addFlags(c.Flags())
	return c
}

// Complete has nothing to fill in.
func (o *AgentAccessOptions) Complete() error { return nil }

// Validate checks the flags.
func (o *AgentAccessOptions) Validate() error {
	errs := []error{validateClusterNameFlag(o.ClusterName)}
	if o.AgentKubeconfig != "" {
		if _, err := os.Lstat(o.AgentKubeconfig); err == nil {
			errs = append(errs, fmt.Errorf("--agent-kubeconfig %s exists: choose a new file, credentials are not overwritten", o.AgentKubeconfig))
		}
		if o.DryRun {
			errs = append(errs, errors.New("--agent-kubeconfig issues a certificate, which a --dry-run cannot"))
		}
	}
	errs = append(errs, o.Issue.Validate())
	return errors.Join(errs...)
}

// minCertificateValidity is the least a CertificateSigningRequest may ask.
const minCertificateValidity = 10 * time.Minute

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
	if err := applyObjects(ctx, out, a, objs, o.ApplyFlags); err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	removed, err := install.RemoveRetiredAgentAccess(ctx, kube, o.ClusterName, o.DryRun)
	for _, r := range removed {
		fmt.Fprintln(out, r)
	}
	if err != nil {
		return err
	}
	if o.AgentKubeconfig == "" {
		return nil
	}
	issued, h, err := issueAgentKubeconfig(ctx, cfg, out, errOut, o.ClusterName, o.Issue)
	if err != nil {
		return err
	}
	// O_EXCL: never overwrite credentials, also when the file appeared
	// since Validate.
	f, err := os.OpenFile(o.AgentKubeconfig, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("writing the agent's hub kubeconfig: %w", err)
	}
	if _, err := f.Write(issued.Raw); err != nil {
		f.Close()
		return fmt.Errorf("writing the agent's hub kubeconfig: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing the agent's hub kubeconfig: %w", err)
	}
	fmt.Fprintf(errOut, "Wrote %s: the hub kubeconfig of %s, valid until %s. On the managed cluster %s, run:\n  fleetfit install agent --cluster-name %s --hub-kubeconfig %s --kubeconfig <%s's kubeconfig>\n",
		o.AgentKubeconfig, h.User, issued.NotAfter.UTC().Format(time.RFC3339), o.ClusterName, o.ClusterName, o.AgentKubeconfig, o.ClusterName)
	return nil
}

// issueAgentKubeconfig issues the agent of cluster a hub kubeconfig,
// reports the approved request as kubectl would, and warns of what may keep
// the agent from using it.
func issueAgentKubeconfig(ctx context.Context, cfg *rest.Config, out, errOut io.Writer, cluster string, f IssueFlags) (*install.AgentKubeconfig, *install.HubKubeconfig, error) {
	issued, err := install.IssueAgentKubeconfig(ctx, cfg, cluster, f.options())
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(out, "certificatesigningrequest.certificates.k8s.io/%s approved\n", issued.Request)
	h, err := install.ParseHubKubeconfig(issued.Raw, "the hub kubeconfig issued for the agent")
	if err != nil {
		return nil, nil, err
	}
	warnings := h.Warnings(cluster, time.Now())
	if f.HubServer == "" && len(warnings) > 0 {
		warnings = append(warnings, "pass --hub-server with the hub's address as the managed cluster's pods reach it")
	}
	warn(errOut, warnings...)
	return issued, h, nil
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
