// Package addoncmd holds `fleetfit addon enable` and `fleetfit addon
// disable`, which deploy fleetfit's agent on managed clusters through Open
// Cluster Management's add-on manager, and remove it, exactly as
// `clusteradm addon enable|disable --names fleetfit-agent` do: by creating
// or deleting the ManagedClusterAddOn fleetfit-agent in each cluster's
// namespace on the hub.
package addoncmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	addonclient "open-cluster-management.io/api/client/addon/clientset/versioned"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// NewCommand returns `fleetfit addon`.
func NewCommand(flags *clientopts.Flags) *cobra.Command {
	c := &cobra.Command{
		Use:   "addon",
		Short: "Enable or disable fleetfit's agent on managed clusters as an OCM add-on",
		Long: `Enable or disable the ` + deployaddon.Name + ` add-on on managed clusters of the Open Cluster
Management hub of --kubeconfig/--context, as 'clusteradm addon enable|disable --names
` + deployaddon.Name + `' do. The add-on must be installed on the hub first ('fleetfit install hub'
or 'fleetfit install addon'); OCM's add-on manager then deploys the agent into the namespace
` + deployagent.Namespace + ` of each enabled cluster.`,
	}
	c.AddCommand(newEnableCommand(flags), newDisableCommand(flags))
	return c
}

// runOptions make a command's Options → Complete → Validate → Run sequence
// one call.
type runOptions interface {
	Complete() error
	Validate() error
	Run(ctx context.Context, out io.Writer) error
}

func runE(o runOptions) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, _ []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(c.Context(), c.OutOrStdout())
	}
}

// EnableOptions are the options of `fleetfit addon enable`.
type EnableOptions struct {
	Flags     *clientopts.Flags
	Clusters  []string
	Namespace string
	Annotate  []string
	Labels    []string

	enable install.EnableAddOnOptions
}

func newEnableCommand(flags *clientopts.Flags) *cobra.Command {
	o := &EnableOptions{Flags: flags, Namespace: install.DefaultAddOnInstallNamespace}
	c := &cobra.Command{
		Use:   "enable --clusters NAME,...",
		Short: "Deploy fleetfit's agent on managed clusters through OCM's add-on manager",
		Long: `Create the ManagedClusterAddOn ` + deployaddon.Name + ` in the namespace of each cluster of --clusters
on the hub, as 'clusteradm addon enable --names ` + deployaddon.Name + ` --clusters ...' does: OCM's
add-on manager then deploys the agent there, and OCM's registration agent gives it hub
credentials, bound to the ClusterRole fleetfit:agent in the cluster's namespace, and renews them.

Every cluster must be a ManagedCluster of the hub, and the add-on must be installed on it,
before anything is written. Enabling again changes nothing; the annotations and labels of an
existing ManagedClusterAddOn are set to those given, as clusteradm sets them.`,
		Example: `  fleetfit addon enable --clusters cluster1,cluster2 --kubeconfig hub.kubeconfig

  # The same, with clusteradm
  clusteradm addon enable --names ` + deployaddon.Name + ` --clusters cluster1,cluster2`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	c.Flags().StringSliceVar(&o.Clusters, "clusters", nil, "the managed clusters to deploy the agent on (comma separated)")
	c.Flags().StringVarP(&o.Namespace, "namespace", "n", o.Namespace,
		"the ManagedClusterAddOn's spec.installNamespace, as clusteradm's --namespace; OCM deprecated it, and the agent is installed in "+deployagent.Namespace+" whatever it says")
	c.Flags().StringSliceVar(&o.Annotate, "annotate", nil, "annotations of the ManagedClusterAddOn (key1=value1,key2=value2)")
	c.Flags().StringSliceVar(&o.Labels, "labels", nil, "labels of the ManagedClusterAddOn (key1=value1,key2=value2)")
	return c
}

// Complete reads the annotations and labels.
func (o *EnableOptions) Complete() error {
	annotations, err := keyValues("annotation", o.Annotate)
	if err != nil {
		return err
	}
	labels, err := keyValues("label", o.Labels)
	if err != nil {
		return err
	}
	o.enable = install.EnableAddOnOptions{
		AddOn:            deployaddon.Name,
		Clusters:         o.Clusters,
		InstallNamespace: o.Namespace,
		Annotations:      annotations,
		Labels:           labels,
	}
	return nil
}

// Validate checks the flags.
func (o *EnableOptions) Validate() error {
	if err := validateClusters(o.Clusters); err != nil {
		return err
	}
	if len(o.Clusters) == 0 {
		return errors.New("--clusters is required: the managed clusters to deploy the agent on")
	}
	if o.Namespace == "" {
		return errors.New("--namespace must not be empty")
	}
	return nil
}

// Run creates or updates the ManagedClusterAddOns, printing a line per
// cluster done.
func (o *EnableOptions) Run(ctx context.Context, out io.Writer) error {
	clients, err := addOnClients(o.Flags)
	if err != nil {
		return err
	}
	if err := checkEveryCluster(ctx, clients, o.enable); err != nil {
		return err
	}
	done, err := install.EnableAddOn(ctx, clients, o.enable)
	for _, cluster := range done {
		fmt.Fprintf(out, "Deploying %s add-on to managed cluster %s (namespace %s).\n", deployaddon.Name, cluster, deployagent.Namespace)
	}
	return err
}

// DisableOptions are the options of `fleetfit addon disable`.
type DisableOptions struct {
	Flags    *clientopts.Flags
	Clusters []string
}

func newDisableCommand(flags *clientopts.Flags) *cobra.Command {
	o := &DisableOptions{Flags: flags}
	c := &cobra.Command{
		Use:   "disable [--clusters NAME,...]",
		Short: "Remove fleetfit's agent from managed clusters that OCM's add-on manager deployed it on",
		Long: `Delete the ManagedClusterAddOn ` + deployaddon.Name + ` in the namespace of each cluster of --clusters on
the hub, or, without --clusters, of every managed cluster, as 'clusteradm addon disable --names
` + deployaddon.Name + `' does: OCM's add-on manager then removes the agent and its hub credentials.
Every cluster given must be a ManagedCluster of the hub; a cluster without the add-on is
reported and left alone.`,
		Example: `  fleetfit addon disable --clusters cluster1 --kubeconfig hub.kubeconfig

  # The same, with clusteradm
  clusteradm addon disable --names ` + deployaddon.Name + ` --clusters cluster1`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	c.Flags().StringSliceVar(&o.Clusters, "clusters", nil, "the managed clusters to remove the agent from (comma separated; default: all)")
	return c
}

// Complete does nothing: the flags are used as they are.
func (o *DisableOptions) Complete() error { return nil }

// Validate checks the flags.
func (o *DisableOptions) Validate() error { return validateClusters(o.Clusters) }

// Run deletes the ManagedClusterAddOns, printing a line per cluster.
func (o *DisableOptions) Run(ctx context.Context, out io.Writer) error {
	clients, err := addOnClients(o.Flags)
	if err != nil {
		return err
	}
	found, err := install.DisableAddOn(ctx, clients, deployaddon.Name, o.Clusters)
	clusters := make([]string, 0, len(found))
	for cluster := range found {
		clusters = append(clusters, cluster)
	}
	slices.Sort(clusters)
	for _, cluster := range clusters {
		if found[cluster] {
			fmt.Fprintf(out, "Undeploying %s add-on in managed cluster %s.\n", deployaddon.Name, cluster)
		} else {
			fmt.Fprintf(out, "%s add-on not found in managed cluster %s.\n", deployaddon.Name, cluster)
		}
	}
	return err
}

// validateClusters refuses an empty name in --clusters, as clusteradm does.
func validateClusters(clusters []string) error {
	for _, c := range clusters {
		if c == "" {
			return errors.New("--clusters must not hold an empty name")
		}
		if err := install.ValidateClusterName(c); err != nil {
			return fmt.Errorf("--clusters: %w", err)
		}
	}
	return nil
}

// keyValues parses key=value pairs as clusteradm does: each holds exactly
// one "=".
func keyValues(what string, pairs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range pairs {
		kv := strings.Split(p, "=")
		if len(kv) != 2 {
			return nil, fmt.Errorf("%s %q: want key=value", what, p)
		}
		out[kv[0]] = kv[1]
	}
	return out, nil
}

func addOnClients(flags *clientopts.Flags) (install.AddOnClients, error) {
	cfg, err := flags.RESTConfig()
	if err != nil {
		return install.AddOnClients{}, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return install.AddOnClients{}, err
	}
	clusters, err := clusterclient.NewForConfig(cfg)
	if err != nil {
		return install.AddOnClients{}, err
	}
	addons, err := addonclient.NewForConfig(cfg)
	if err != nil {
		return install.AddOnClients{}, err
	}
	return install.AddOnClients{Discovery: disc, Cluster: clusters, AddOn: addons}, nil
}
