// Package install holds `fleetfit install`, which puts fleetfit's
// CustomResourceDefinitions (and, as the project grows, its hub and agent
// deployments) on a cluster.
package install

import (
	"fmt"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// NewCommand returns `fleetfit install`.
func NewCommand(flags *clientopts.Flags) *cobra.Command {
	c := &cobra.Command{
		Use:   "install",
		Short: "Install fleetfit on a hub or a managed cluster",
	}
	c.AddCommand(newCRDsCommand(flags))
	return c
}

// CRDsOptions are the options of `fleetfit install crds`.
type CRDsOptions struct {
	Flags *clientopts.Flags
	Side  string

	crds []*apiextensionsv1.CustomResourceDefinition
}

func newCRDsCommand(flags *clientopts.Flags) *cobra.Command {
	o := &CRDsOptions{Flags: flags}
	c := &cobra.Command{
		Use:   "crds",
		Short: "Apply the CustomResourceDefinitions a hub (--side hub) or a managed cluster (--side spoke) needs",
		Example: `  # On the hub: OCM's hub APIs (ManagedCluster, Placement, ManifestWork, ...) and fleetfit's
  fleetfit install crds --side hub --kubeconfig hub.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			if err := o.Complete(); err != nil {
				return err
			}
			return o.Run(c)
		},
	}
	c.Flags().StringVar(&o.Side, "side", "hub", "which CRDs to apply: hub or spoke")
	return c
}

// Validate checks the flags.
func (o *CRDsOptions) Validate() error {
	if o.Side != "hub" && o.Side != "spoke" {
		return fmt.Errorf("--side must be hub or spoke, not %q", o.Side)
	}
	return nil
}

// Complete loads the CRDs for the chosen side.
func (o *CRDsOptions) Complete() (err error) {
	if o.Side == "hub" {
		o.crds, err = manifests.HubCRDs()
	} else {
		o.crds, err = manifests.SpokeCRDs()
	}
	return err
}

// Run applies the CRDs and waits until they are established.
func (o *CRDsOptions) Run(c *cobra.Command) error {
	cfg, err := o.Flags.RESTConfig()
	if err != nil {
		return err
	}
	if err := install.ApplyCRDs(c.Context(), cfg, o.crds); err != nil {
		return err
	}
	for _, crd := range o.crds {
		fmt.Fprintf(c.OutOrStdout(), "customresourcedefinition.apiextensions.k8s.io/%s applied\n", crd.Name)
	}
	return nil
}
