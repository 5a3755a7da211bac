package installcmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// CRDsOptions are the options of `fleetfit install crds`.
type CRDsOptions struct {
	Flags *clientopts.Flags
	Side  string
	ApplyFlags

	crds []*apiextensionsv1.CustomResourceDefinition
}

func newCRDsCommand(flags *clientopts.Flags) *cobra.Command {
	o := &CRDsOptions{Flags: flags}
	c := &cobra.Command{
		Use:   "crds",
		Short: "Apply the CustomResourceDefinitions a hub (--side hub) or a managed cluster (--side spoke) needs",
		Long: `Apply the CustomResourceDefinitions a hub (--side hub) or a managed cluster (--side spoke) needs,
and wait until they are served: on a hub, OCM's hub APIs (ManagedCluster, ManagedClusterSet and
its bindings, Placement, PlacementDecision, AddOnPlacementScore, ManifestWork,
ManifestWorkReplicaSet) and fleetfit's; on a managed cluster, ClusterClaim and
AppliedManifestWork. OCM's CRDs that OCM itself installed are left at OCM's version.`,
		Example: `  # On the hub: OCM's hub APIs (ManagedCluster, Placement, ManifestWork, ...) and fleetfit's
  fleetfit install crds --side hub --kubeconfig hub.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	c.Flags().StringVar(&o.Side, "side", "hub", "which CRDs to apply: hub, spoke, or sig-multicluster (on a hub: the SIG-Multicluster ClusterProfile and PlacementDecision APIs, which fleetfit-hub then mirrors its decisions into)")
	o.addFlags(c.Flags())
	return c
}

// Complete loads the CRDs for the chosen side.
func (o *CRDsOptions) Complete() (err error) {
	switch o.Side {
	case "hub":
		o.crds, err = manifests.HubCRDs()
	case "spoke":
		o.crds, err = manifests.SpokeCRDs()
	case "sig-multicluster":
		o.crds, err = manifests.SIGMulticlusterCRDs()
	}
	return err
}

// Validate checks the flags.
func (o *CRDsOptions) Validate() error {
	if o.Side != "hub" && o.Side != "spoke" && o.Side != "sig-multicluster" {
		return fmt.Errorf("--side must be hub, spoke or sig-multicluster, not %q", o.Side)
	}
	return nil
}

// Run applies the CRDs and waits until they are established.
func (o *CRDsOptions) Run(ctx context.Context, out, _ io.Writer) error {
	cfg, err := o.Flags.RESTConfig()
	if err != nil {
		return err
	}
	a, err := install.NewApplier(cfg)
	if err != nil {
		return err
	}
	return applyCRDs(ctx, out, cfg, a, o.crds, o.ApplyFlags)
}
