// Package installcmd holds `fleetfit install`, which puts fleetfit on a hub
// (`install hub`, with the agent's OCM add-on, also alone as `install
// addon`) and on managed clusters (`install agent`, with the hub side of an
// agent's access from `install agent-access`), and their
// CustomResourceDefinitions (`install crds`). Everything is applied with
// server-side apply, so installing again changes nothing, and installing a
// newer version updates in place.
package installcmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// NewCommand returns `fleetfit install`.
func NewCommand(flags *clientopts.Flags) *cobra.Command {
	c := &cobra.Command{
		Use:   "install",
		Short: "Install fleetfit on a hub or a managed cluster",
		Long: `Install fleetfit on an Open Cluster Management hub and its managed clusters.

Everything is applied with server-side apply (field manager "fleetfit"): running an install
again changes nothing, and a newer version updates in place. Each applied object is
printed as kubectl prints it.

  1. On the hub:               fleetfit install hub
  2. Where OCM's add-on manager runs, on the hub (install hub applies the add-on too):
                               fleetfit addon enable --clusters NAME,...
     (or clusteradm addon enable --names fleetfit-agent --clusters NAME,...)
     Elsewhere, on each managed cluster:
                               fleetfit install agent --cluster-name NAME --hub-admin-kubeconfig HUB
     or, when the hub's admin is someone else, first on the hub
                               fleetfit install agent-access --cluster-name NAME --agent-kubeconfig FILE
     then on the managed cluster
                               fleetfit install agent --cluster-name NAME --hub-kubeconfig FILE

The cluster each command works on is chosen with --kubeconfig and --context, as with kubectl.`,
	}
	c.AddCommand(
		newHubCommand(flags),
		newAgentCommand(flags),
		newAgentAccessCommand(flags),
		newAddOnCommand(flags),
		newCRDsCommand(flags),
	)
	return c
}

// ApplyFlags are the flags every install command shares.
type ApplyFlags struct {
	DryRun         bool
	ForceConflicts bool
}

func (f *ApplyFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&f.DryRun, "dry-run", false, "have the API server validate every object without persisting it")
	fs.BoolVar(&f.ForceConflicts, "force-conflicts", false, "take over fields that another field manager (e.g. kubectl edit) changed, setting them back to fleetfit's values")
}

func (f ApplyFlags) options() install.ApplyOptions {
	return install.ApplyOptions{DryRun: f.DryRun, ForceConflicts: f.ForceConflicts}
}

// runOptions make a command's Options → Complete → Validate → Run sequence
// one call.
type runOptions interface {
	Complete() error
	Validate() error
	Run(ctx context.Context, out, errOut io.Writer) error
}

func runE(o runOptions) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, _ []string) error {
		if err := o.Complete(); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(c.Context(), c.OutOrStdout(), c.ErrOrStderr())
	}
}

// applyObjects applies objs, printing a line per object applied, also when
// an error stops it half-way.
func applyObjects(ctx context.Context, out io.Writer, a *install.Applier, objs []*unstructured.Unstructured, f ApplyFlags) error {
	results, err := a.Apply(ctx, objs, f.options())
	for _, r := range results {
		fmt.Fprintln(out, r)
	}
	if conflict := (*install.ConflictError)(nil); errors.As(err, &conflict) {
		return fmt.Errorf("%w\n(they were changed on the cluster after fleetfit set them: pass --force-conflicts to set them back)", err)
	}
	return err
}

// applyCRDs applies CRDs, except OCM's where OCM installed them, and, unless
// it is a dry run, waits until they are served.
func applyCRDs(ctx context.Context, out io.Writer, cfg *rest.Config, a *install.Applier, crds []*apiextensionsv1.CustomResourceDefinition, f ApplyFlags) error {
	crds, kept, err := install.WithoutOCMsOwn(ctx, cfg, crds)
	if err != nil {
		return err
	}
	for _, k := range kept {
		fmt.Fprintln(out, k)
	}
	objs, err := install.CRDObjects(crds)
	if err != nil {
		return err
	}
	if err := applyObjects(ctx, out, a, objs, f); err != nil {
		return err
	}
	if f.DryRun {
		return nil
	}
	return install.WaitForCRDs(ctx, cfg, crds)
}

func warn(errOut io.Writer, warnings ...string) {
	for _, w := range warnings {
		fmt.Fprintf(errOut, "Warning: %s\n", w)
	}
}
