package installcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// AgentOptions are the options of `fleetfit install agent`.
type AgentOptions struct {
	Flags              *clientopts.Flags
	ClusterName        string
	HubKubeconfig      string
	HubAdminKubeconfig string
	Image              string
	// DeliveryNamespaces are the namespaces whose HPAIntents may deliver here.
	DeliveryNamespaces []string
	// Issue tunes the hub kubeconfig issued for the agent when there is no
	// --hub-kubeconfig.
	Issue IssueFlags
	ApplyFlags

	hub    *install.HubKubeconfig
	access *AgentAccessOptions
}

func newAgentCommand(flags *clientopts.Flags) *cobra.Command {
	o := &AgentOptions{Flags: flags, Image: install.DefaultImage()}
	c := &cobra.Command{
		Use:   "agent",
		Short: "Install fleetfit-agent on a managed cluster, reporting to the hub with a kubeconfig of its own",
		Long: `Install fleetfit-agent on the managed cluster of --kubeconfig/--context: the managed
cluster's CRDs (as 'fleetfit install crds --side spoke'), the namespace ` + deployagent.Namespace + ` with the
agent's ServiceAccount and RBAC (read Nodes and Pods), a Secret holding the hub kubeconfig of
--hub-kubeconfig, and a Deployment running fleetfit-agent with it.

HPAIntents deliver their workloads through OCM's work agent, which applies them as the
ServiceAccount fleetfit-delivery of the intent's namespace, and only as far as that account
may. --delivery-namespace NAMESPACE (repeatable) creates the namespace, that ServiceAccount
and its RBAC (the workload kinds the hub delivers by default, in that namespace only), so
that intents of NAMESPACE on the hub may deliver here; grant more to
system:serviceaccount:NAMESPACE:fleetfit-delivery for more. The namespace is labelled
machines.fleetfit.io/inject-resource=enabled, so that delivered workloads that take a
machine type of a MachineGroup get their machines from the agent.

The hub kubeconfig is the agent's own identity on the hub, the user
system:fleetfit:agent:<cluster> (a client certificate with that common name, for example);
it is stored with its certificates inlined, and must reach the hub from inside the managed
cluster. That identity needs RBAC on the hub, which takes the hub's admin rights: with
--hub-admin-kubeconfig it is applied here, otherwise run 'fleetfit install agent-access' on
the hub. With --hub-admin-kubeconfig and no --hub-kubeconfig, the agent's identity is issued
here too, as 'fleetfit install agent-access --agent-kubeconfig' issues it.

The image is the one built from the repository's Dockerfile; by default it is this
version's, published as ` + install.ImageRepository + `:<version>.`,
		Example: `  # Everything at once with the hub's admin credentials: the agent's identity, its hub RBAC
  fleetfit install agent --kubeconfig cluster1.kubeconfig --cluster-name cluster1 --hub-admin-kubeconfig hub.kubeconfig

  # The hub side too, for an identity the agent already has
  fleetfit install agent --kubeconfig cluster1.kubeconfig --cluster-name cluster1 \
    --hub-kubeconfig cluster1-agent-hub.kubeconfig --hub-admin-kubeconfig hub.kubeconfig

  # The managed cluster only; the hub's admin runs 'fleetfit install agent-access'
  fleetfit install agent --context cluster1 --cluster-name cluster1 --hub-kubeconfig cluster1-agent-hub.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	c.Flags().StringVar(&o.ClusterName, "cluster-name", "", "the managed cluster's name on the hub (its ManagedCluster and namespace there)")
	c.Flags().StringVar(&o.HubKubeconfig, "hub-kubeconfig", "", "kubeconfig the agent uses to reach the hub, as system:fleetfit:agent:<cluster>; its current context is used")
	c.Flags().StringVar(&o.HubAdminKubeconfig, "hub-admin-kubeconfig", "", "kubeconfig with admin rights on the hub, to grant the agent's identity its RBAC there (as 'fleetfit install agent-access')")
	c.Flags().StringVar(&o.Image, "image", o.Image, "fleetfit's container image, built from the repository's Dockerfile")
	c.Flags().StringSliceVar(&o.DeliveryNamespaces, "delivery-namespace", nil, "a namespace whose HPAIntents on the hub may deliver workloads into the same namespace here (repeatable)")
	o.Issue.addFlags(c.Flags(), "without --hub-kubeconfig: ")
	o.addFlags(c.Flags())
	return c
}

// Complete prepares the hub side when the hub's admin credentials are given.
func (o *AgentOptions) Complete() error {
	if o.HubAdminKubeconfig != "" {
		flags := clientopts.New()
		flags.SetKubeconfig(o.HubAdminKubeconfig)
		o.access = &AgentAccessOptions{Flags: flags, ClusterName: o.ClusterName, ApplyFlags: o.ApplyFlags}
	}
	return nil
}

// Validate checks the flags and reads the hub kubeconfig, reporting every
// problem at once. Nothing is contacted.
func (o *AgentOptions) Validate() error {
	var errs []error
	if err := validateClusterNameFlag(o.ClusterName); err != nil {
		errs = append(errs, err)
	}
	if err := install.ValidateImage(o.Image); err != nil {
		errs = append(errs, fmt.Errorf("--image: %w", err))
	}
	switch {
	case o.HubKubeconfig == "" && o.HubAdminKubeconfig == "":
		errs = append(errs, errors.New("--hub-kubeconfig is required: the agent's kubeconfig for the hub (or --hub-admin-kubeconfig, to issue one)"))
	case o.HubKubeconfig == "" && o.DryRun:
		errs = append(errs, errors.New("--dry-run needs --hub-kubeconfig: a dry run issues no certificate"))
	case o.HubKubeconfig == "":
		// Issued in Run.
	default:
		if hub, err := install.LoadHubKubeconfig(o.HubKubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--hub-kubeconfig: %w", err))
		} else {
			o.hub = hub
		}
	}
	errs = append(errs, o.Issue.Validate())
	if o.HubAdminKubeconfig != "" {
		if _, err := os.Stat(o.HubAdminKubeconfig); err != nil {
			errs = append(errs, fmt.Errorf("--hub-admin-kubeconfig: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Run grants the agent its hub access (with --hub-admin-kubeconfig), then
// applies the managed cluster's CRDs, waits until they are served, and
// applies the agent's objects.
func (o *AgentOptions) Run(ctx context.Context, out, errOut io.Writer) error {
	crds, err := manifests.SpokeCRDs()
	if err != nil {
		return err
	}
	cfg, err := o.Flags.RESTConfig()
	if err != nil {
		return err
	}
	if o.hub != nil {
		warn(errOut, o.hub.Warnings(o.ClusterName, time.Now())...)
	}

	// The hub first: should it refuse, the managed cluster is left as it was.
	if o.access != nil {
		hubCfg, err := o.access.Flags.RESTConfig()
		if err != nil {
			return fmt.Errorf("--hub-admin-kubeconfig: %w", err)
		}
		if o.hub != nil && !sameServer(hubCfg.Host, o.hub.Server) {
			warn(errOut, fmt.Sprintf("--hub-kubeconfig points at %s but --hub-admin-kubeconfig at %s: are they the same hub?", o.hub.Server, hubCfg.Host))
		}
		fmt.Fprintf(out, "On the hub (%s):\n", hubCfg.Host)
		if err := o.access.run(ctx, hubCfg, out, errOut); err != nil {
			return err
		}
		if o.hub == nil {
			if o.hub, err = o.agentIdentity(ctx, cfg, hubCfg, out, errOut); err != nil {
				return err
			}
		}
		fmt.Fprintf(out, "On the managed cluster %s (%s):\n", o.ClusterName, cfg.Host)
	}
	objs, err := install.AgentObjects(install.AgentOptions{ClusterName: o.ClusterName, Image: o.Image, HubKubeconfig: o.hub.Raw, DeliveryNamespaces: o.DeliveryNamespaces})
	if err != nil {
		return err
	}
	a, err := install.NewApplier(cfg)
	if err != nil {
		return err
	}
	if err := applyCRDs(ctx, out, cfg, a, crds, o.ApplyFlags); err != nil {
		return err
	}
	if err := applyObjects(ctx, out, a, objs, o.ApplyFlags); err != nil {
		return err
	}
	if o.access == nil {
		fmt.Fprintln(errOut, accessHint(o.ClusterName))
	}
	return nil
}

// agentIdentity returns the hub kubeconfig the agent already has in the
// managed cluster when it is its own, for this hub, and fresh, so that
// installing again changes nothing; otherwise it issues a new one.
func (o *AgentOptions) agentIdentity(ctx context.Context, spokeCfg, hubCfg *rest.Config, out, errOut io.Writer) (*install.HubKubeconfig, error) {
	kube, err := kubernetes.NewForConfig(spokeCfg)
	if err != nil {
		return nil, err
	}
	secret, err := kube.CoreV1().Secrets(deployagent.Namespace).Get(ctx, deployagent.HubKubeconfigSecret, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the agent's hub kubeconfig in the managed cluster: %w", err)
	}
	if err == nil {
		name := fmt.Sprintf("in Secret %s/%s", deployagent.Namespace, deployagent.HubKubeconfigSecret)
		h, err := install.ParseHubKubeconfig(secret.Data[deployagent.HubKubeconfigSecretKey], name)
		server := o.Issue.HubServer
		if server == "" {
			server = hubCfg.Host
		}
		if err == nil && h.User == deployagent.AgentUser(o.ClusterName) && sameServer(h.Server, server) && h.Fresh(time.Now()) {
			fmt.Fprintf(errOut, "Keeping the agent's hub kubeconfig %s: its certificate is valid until %s.\n", name, h.NotAfter.UTC().Format(time.RFC3339))
			return h, nil
		}
	}
	_, h, err := issueAgentKubeconfig(ctx, hubCfg, out, errOut, o.ClusterName, o.Issue)
	return h, err
}

func sameServer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}
