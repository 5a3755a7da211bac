package installcmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// AddOnOptions are the options of `fleetfit install addon`.
type AddOnOptions struct {
	Flags *clientopts.Flags
	Image string
	ApplyFlags

	addOn install.AddOnOptions
}

func newAddOnCommand(flags *clientopts.Flags) *cobra.Command {
	o := &AddOnOptions{Flags: flags, Image: install.DefaultImage()}
	c := &cobra.Command{
		Use:   "addon",
		Short: "Install fleetfit's agent as an OCM add-on on the hub: the ClusterManagementAddOn " + deployaddon.Name + " and its AddOnTemplate",
		Long: `Install the ` + deployaddon.Name + ` add-on on the Open Cluster Management hub of --kubeconfig/--context:
the hub ClusterRole fleetfit:agent, the admission policy that keeps each agent to its own
cluster's namespace, the AddOnTemplate ` + deployaddon.TemplateName + ` and the ClusterManagementAddOn ` + deployaddon.Name + `
(deploy/addon). 'fleetfit install hub' applies them too; this command is for hubs where the
rest of fleetfit is installed already, or to change the agent's image.

Nothing runs on a managed cluster until the add-on is enabled there, with
'clusteradm addon enable --names ` + deployaddon.Name + ` --clusters NAME,...' or
'fleetfit addon enable --clusters NAME,...'. OCM's add-on manager then deploys the agent into
the namespace fleetfit-agent of each such cluster, and OCM's registration agent issues its
hub credentials and renews them before they expire. The hub needs OCM's add-on manager
(clusteradm init runs it) and fleetfit's and OCM's hub CRDs ('fleetfit install crds --side hub').`,
		Example: `  # The add-on with this version's image, then the agent on two clusters
  fleetfit install addon --kubeconfig hub.kubeconfig
  fleetfit addon enable --clusters cluster1,cluster2 --kubeconfig hub.kubeconfig

  # Another image: every enabled cluster's agent is updated
  fleetfit install addon --kubeconfig hub.kubeconfig --image registry.example.com/fleetfit:dev`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	c.Flags().StringVar(&o.Image, "image", o.Image, "fleetfit's container image, built from the repository's Dockerfile, for the agent")
	o.addFlags(c.Flags())
	return c
}

// Complete turns the flags into what is installed.
func (o *AddOnOptions) Complete() error {
	o.addOn = install.AddOnOptions{Image: o.Image}
	return nil
}

// Validate checks the flags.
func (o *AddOnOptions) Validate() error {
	if err := install.ValidateImage(o.Image); err != nil {
		return fmt.Errorf("--image: %w", err)
	}
	return nil
}

// Run applies the add-on's objects. It needs OCM's add-on CRDs on the hub.
func (o *AddOnOptions) Run(ctx context.Context, out, _ io.Writer) error {
	objs, err := install.AddOnObjects(o.addOn)
	if err != nil {
		return err
	}
	cfg, err := o.Flags.RESTConfig()
	if err != nil {
		return err
	}
	a, err := install.NewApplier(cfg)
	if err != nil {
		return err
	}
	err = applyObjects(ctx, out, a, objs, o.ApplyFlags)
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%w\n(the hub lacks OCM's add-on CRDs: install OCM's cluster manager, or run fleetfit install crds --side hub)", err)
	}
	return err
}
