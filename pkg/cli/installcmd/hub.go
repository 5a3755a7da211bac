package installcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/install"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
)

// HubOptions are the options of `fleetfit install hub`.
type HubOptions struct {
	Flags      *clientopts.Flags
	Image      string
	Placements string
	ApplyFlags

	hub   install.HubOptions
	addOn install.AddOnOptions
}

func newHubCommand(flags *clientopts.Flags) *cobra.Command {
	o := &HubOptions{Flags: flags, Image: install.DefaultImage(), Placements: string(placementmode.All)}
	c := &cobra.Command{
		Use:   "hub",
		Short: "Install fleetfit-hub on an OCM hub: the hub's CRDs, RBAC, Deployment and Service, and the agent's add-on",
		Long: `Install fleetfit-hub on the hub cluster of --kubeconfig/--context: the hub's CRDs (as
'fleetfit install crds --side hub'), then the namespace fleetfit-system with fleetfit-hub's
ServiceAccount, RBAC, Deployment and Service (deploy/hub), then the fleetfit-agent add-on
(as 'fleetfit install addon'), which 'clusteradm addon enable' or 'fleetfit addon enable'
deploys on managed clusters.

The image is the one built from the repository's Dockerfile, which holds fleetfit-hub,
fleetfit-agent and fleetfit; by default it is this version's, published as
` + install.ImageRepository + `:<version>.`,
		Example: `  # fleetfit-hub schedules every Placement (scale OCM's placement controller to zero)
  fleetfit install hub --kubeconfig hub.kubeconfig

  # fleetfit-hub runs beside OCM's placement controller and schedules only the Placements
  # that carry OCM's experimental-scheduling-disable annotation and the ` + placementmode.SchedulerLabel + ` label
  fleetfit install hub --kubeconfig hub.kubeconfig --placements annotated --image registry.example.com/fleetfit:dev

  # What would change, checked by the API server; nothing is written
  fleetfit install hub --kubeconfig hub.kubeconfig --dry-run`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	c.Flags().StringVar(&o.Image, "image", o.Image, "fleetfit's container image, built from the repository's Dockerfile, for fleetfit-hub and the add-on's agent")
	c.Flags().StringVar(&o.Placements, "placements", o.Placements, `which Placements fleetfit-hub schedules: "all" (it replaces OCM's placement controller) or "annotated" (it runs beside it)`)
	o.addFlags(c.Flags())
	return c
}

// Complete turns the flags into what is installed.
func (o *HubOptions) Complete() error {
	o.hub = install.HubOptions{Image: o.Image, Placements: placementmode.Mode(o.Placements)}
	o.addOn = install.AddOnOptions{Image: o.Image}
	return nil
}

// Validate checks the flags.
func (o *HubOptions) Validate() error {
	var errs []error
	if _, err := placementmode.ParseMode(o.Placements); err != nil {
		errs = append(errs, fmt.Errorf("--placements %w", err))
	}
	if err := install.ValidateImage(o.Image); err != nil {
		errs = append(errs, fmt.Errorf("--image: %w", err))
	}
	return errors.Join(errs...)
}

// Run applies the hub's CRDs, waits until they are served, then applies
// fleetfit-hub's objects and the agent's add-on.
func (o *HubOptions) Run(ctx context.Context, out, errOut io.Writer) error {
	crds, err := manifests.HubCRDs()
	if err != nil {
		return err
	}
	objs, err := install.HubObjects(o.hub)
	if err != nil {
		return err
	}
	addOn, err := install.AddOnObjects(o.addOn)
	if err != nil {
		return err
	}
	objs = append(objs, addOn...)
	cfg, err := o.Flags.RESTConfig()
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
	if o.hub.Placements == placementmode.All {
		fmt.Fprintf(errOut, "fleetfit-hub schedules every Placement (--placements all): scale OCM's placement controller to zero, or reinstall with --placements annotated to run beside it.\n")
	}
	return nil
}
