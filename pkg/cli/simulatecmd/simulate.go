// Package simulatecmd holds `fleetfit simulate`: Placements and HPAIntents scheduled offline, with
// the hub's own scheduler, against a fleet file or a live hub's fleet, changing nothing.
package simulatecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/cli/explaincmd"
	"github.com/fleetfit/fleetfit/pkg/cli/getcmd"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// Options are the options of `fleetfit simulate`.
type Options struct {
	Flags   *clientopts.Flags
	Output  *output.Flags
	Files   []string
	FromHub bool
	At      string
	Explain bool
	Now     func() time.Time

	at time.Time
}

// NewCommand returns `fleetfit simulate`.
func NewCommand(flags *clientopts.Flags) *cobra.Command {
	o := &Options{Flags: flags, Now: time.Now}
	c := &cobra.Command{
		Use:   "simulate -f FILE... [--from-hub]",
		Short: "Schedule Placements and HPAIntents offline with the hub's scheduler, changing nothing",
		Long: `Schedule every Placement of a fleet, with its HPAIntents, exactly as fleetfit-hub would — the
same scheduler, plugins, validation, decision layout and status — and print the decisions.
Nothing is written anywhere, so a fleet file is a complete, portable scheduling test case.

A fleet file is YAML (documents separated by ---) or JSON, each document an object or a List
(as 'kubectl get -o yaml' prints) of: ManagedCluster, ManagedClusterSet,
ManagedClusterSetBinding, AddOnPlacementScore, Placement, PlacementDecision (current
decisions), HPAIntent, and per cluster either its ClusterInventory or plain Nodes and Pods
labelled fleetfit.io/cluster=<cluster> (a Pod bound to one of the file's nodes needs no
label), which are turned into an inventory by the code the fleetfit agent runs. Such a
cluster may also have MachineGroups labelled the same way; their reservation and guest Pods
give each machine type's usage, as the agent counts it.
Objects get the defaults the hub's API server gives them, and anything the API servers would
refuse is an error naming the file, the document and the field: unknown fields, values
outside their CRD's schema or CEL rules, invalid names, labels or amounts of Nodes and Pods,
numbers too large for their field, keys given twice, objects given twice, Pods bound to
another cluster's node, inventories observed in the future, files over 64 MiB and input that
is not UTF-8 or UTF-16 text. See deploy/examples/fleet.yaml.

The fleet is scheduled at the time of its newest inventory (so that an old file stays fresh),
or at --at. With --from-hub the fleet is read from the hub (--kubeconfig, --context) and the
files add to it: a Placement or HPAIntent of a file replaces the hub's of the same name, as if
it were applied. Placements are scheduled in namespace/name order, each seeing the decisions
and capacity reservations of the ones before.`,
		Example: `  # The example fleet: decisions, and why "training" fits nowhere
  fleetfit simulate -f deploy/examples/fleet.yaml --explain

  # What the hub would do with a new Placement and intent, without applying them
  fleetfit simulate --from-hub -f my-placement.yaml -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context(), c.OutOrStdout())
		},
	}
	o.Output = output.AddFlags(c, output.Table, output.YAML, output.JSON)
	c.Flags().StringSliceVarP(&o.Files, "filename", "f", nil, "fleet files (\"-\" reads standard input)")
	c.Flags().BoolVar(&o.FromHub, "from-hub", false, "take the fleet from the hub; files add or replace Placements and HPAIntents")
	c.Flags().StringVar(&o.At, "at", "", "schedule at this time (RFC 3339) instead of the newest inventory's")
	c.Flags().BoolVar(&o.Explain, "explain", false, "with the table, explain every placement: each cluster's filter verdict and scores")
	return c
}

// Validate checks the flags.
func (o *Options) Validate() error {
	var errs []error
	if len(o.Files) == 0 && !o.FromHub {
		errs = append(errs, errors.New("give fleet files with -f, or --from-hub"))
	}
	if o.At != "" {
		t, err := time.Parse(time.RFC3339, o.At)
		if err != nil {
			errs = append(errs, fmt.Errorf("--at %q is not an RFC 3339 time such as 2026-01-02T15:04:05Z: %w", o.At, err))
		}
		o.at = t
	}
	if err := o.Output.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Run simulates and prints the result.
func (o *Options) Run(ctx context.Context, w io.Writer) error {
	fleet, now, err := o.fleet(ctx)
	if err != nil {
		return err
	}
	res, err := simulate.Run(ctx, fleet, simulate.Options{Now: now})
	if err != nil {
		return err
	}
	if o.Output.Structured() {
		return o.Output.PrintObject(w, objects(res))
	}
	return o.print(w, res)
}

func (o *Options) fleet(ctx context.Context) (*simulate.Fleet, time.Time, error) {
	now := o.Now()
	files, err := simulate.ReadFiles(ctx, o.Files, simulate.ReadOptions{Now: now, At: o.at})
	if err != nil {
		return nil, now, err
	}
	if !o.at.IsZero() {
		now = o.at
	}
	if !o.FromHub {
		if at := files.LatestObservation(); o.at.IsZero() && !at.IsZero() {
			now = at
		}
		return files, now, nil
	}
	cfg, err := o.Flags.RESTConfig()
	if err != nil {
		return nil, now, err
	}
	hub, err := simulate.FromHub(ctx, cfg)
	if err != nil {
		return nil, now, err
	}
	hub.Apply(files)
	return hub, now, nil
}

// objects are the simulation's result as the hub would hold it: each Placement with its status
// followed by its PlacementDecisions, then every HPAIntent with its status.
func objects(res *simulate.Result) runtime.Object {
	var objs []runtime.Object
	for i := range res.Placements {
		r := &res.Placements[i]
		r.Placement.SetGroupVersionKind(clusterv1beta1.SchemeGroupVersion.WithKind("Placement"))
		r.Placement.ManagedFields = nil
		objs = append(objs, r.Placement)
		for j := range r.Decisions {
			d := &r.Decisions[j]
			d.SetGroupVersionKind(clusterv1beta1.SchemeGroupVersion.WithKind("PlacementDecision"))
			d.ManagedFields = nil
			objs = append(objs, d)
		}
	}
	for _, in := range res.Intents {
		in.SetGroupVersionKind(fleetfitv1alpha1.SchemeGroupVersion.WithKind("HPAIntent"))
		in.ManagedFields = nil
		objs = append(objs, in)
	}
	return output.List(objs...)
}

func (o *Options) print(w io.Writer, res *simulate.Result) error {
	fmt.Fprintf(w, "Scheduled at %s\n\n", res.Now.UTC().Format(time.RFC3339))
	t := output.NewTable(w)
	t.Row("PLACEMENT", "SELECTED", "CLUSTERS", "SATISFIED", "REASON")
	for i := range res.Placements {
		r := &res.Placements[i]
		var clusters []string
		for _, d := range r.Decisions {
			for _, cd := range d.Status.Decisions {
				clusters = append(clusters, cd.ClusterName)
			}
		}
		satisfied, reason, message := getcmd.Satisfied(r.Placement)
		switch {
		case r.Skipped != "":
			satisfied, reason = "Unknown", "NotScheduled: "+r.Skipped
		case reason == "Misconfigured":
			reason += ": " + message
		}
		t.Row(r.Key(), getcmd.Selected(r.Placement, len(clusters)), output.Or(strings.Join(clusters, ","), "-"), satisfied, reason)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(res.Intents) > 0 {
		fmt.Fprintln(w)
		t = output.NewTable(w)
		t.Row("HPAINTENT", "VALID", "SCHEDULED", "MESSAGE")
		for _, in := range res.Intents {
			valid, scheduled, message := "Unknown", "Unknown", ""
			if c := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionValid); c != nil {
				valid = string(c.Status)
				if c.Status != "True" {
					message = c.Message
				}
			}
			if c := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionScheduled); c != nil {
				scheduled = string(c.Status)
				if message == "" {
					message = c.Message
				}
			}
			t.Row(in.Namespace+"/"+in.Name, valid, scheduled, message)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if !o.Explain {
		return nil
	}
	for i := range res.Placements {
		fmt.Fprintln(w)
		if err := explaincmd.PrintPlacement(w, &res.Placements[i]); err != nil {
			return err
		}
	}
	return nil
}
