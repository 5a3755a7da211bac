// Package explaincmd holds `fleetfit explain placement`: for one Placement, per cluster, the
// filter that rejected it and why, and every prioritizer's score — computed by the hub's own
// scheduler over the fleet as the hub holds it (or as a fleet file describes it).
package explaincmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// NewCommand returns `fleetfit explain`.
func NewCommand(flags *clientopts.Flags) *cobra.Command {
	c := &cobra.Command{
		Use:   "explain",
		Short: "Explain a scheduling decision",
	}
	c.AddCommand(newPlacementCommand(flags))
	return c
}

// PlacementOptions are the options of `fleetfit explain placement`.
type PlacementOptions struct {
	Flags  *clientopts.Flags
	Output *output.Flags
	Files  []string
	Name   string
	Now    func() time.Time
}

func newPlacementCommand(flags *clientopts.Flags) *cobra.Command {
	o := &PlacementOptions{Flags: flags, Now: time.Now}
	c := &cobra.Command{
		Use:   "placement NAME",
		Short: "Show, per cluster, which filter rejected it and why, and every prioritizer's score",
		Long: `Schedule the Placement NAME once more, with the hub's own scheduler and plugins, over the fleet
as the hub holds it now (its clusters, inventories, add-on scores and current decisions), and
show for every cluster of its cluster sets the filter that rejected it and why, or its score
from each prioritizer. Nothing is written. Capacity the hub holds for other placements'
brand-new decisions (in-flight reservations) is not visible from outside the hub.`,
		Example: `  fleetfit explain placement fwall -n demo --kubeconfig hub.kubeconfig
  fleetfit explain placement training -n demo -f deploy/examples/fleet.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Name = args[0]
			if err := o.Output.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context(), c.OutOrStdout())
		},
	}
	o.Output = output.AddFlags(c, output.Table, output.YAML, output.JSON)
	c.Flags().StringSliceVarP(&o.Files, "filename", "f", nil, "fleet files to read instead of the hub (see fleetfit simulate --help)")
	return c
}

// Run explains the placement.
func (o *PlacementOptions) Run(ctx context.Context, w io.Writer) error {
	ns, _, err := o.Flags.Namespace()
	if err != nil {
		return err
	}
	fleet, now, err := simulate.Load(ctx, o.Files, o.Flags.RESTConfig, o.Now())
	if err != nil {
		return err
	}
	key := ns + "/" + o.Name
	res, err := simulate.Run(ctx, fleet, simulate.Options{Now: now, Only: []string{key}})
	if err != nil {
		return err
	}
	if len(res.Placements) == 0 {
		return fmt.Errorf("placement %q not found in namespace %q", o.Name, ns)
	}
	r := &res.Placements[0]
	if o.Output.Structured() {
		if r.Explanation == nil {
			return fmt.Errorf("placement %s is not scheduled by fleetfit: %s", key, r.Skipped)
		}
		return o.Output.PrintData(w, r.Explanation)
	}
	return PrintPlacement(w, r)
}

// PrintPlacement prints what the hub would do with one placement: the verdict, then a line per
// cluster with the filter that rejected it and why, then the scores of the feasible clusters.
func PrintPlacement(w io.Writer, r *simulate.PlacementResult) error {
	p := r.Placement
	// Everything printed outside a table goes through output.Clean: names, reasons and
	// messages come from objects and may hold control characters.
	fmt.Fprintf(w, "Placement %s/%s\n", output.Clean(p.Namespace), output.Clean(p.Name))
	if r.Skipped != "" {
		fmt.Fprintf(w, "  not scheduled: %s\n", output.Clean(r.Skipped))
		return nil
	}
	e := r.Explanation
	want := "all feasible clusters"
	if p.Spec.NumberOfClusters != nil {
		want = fmt.Sprintf("%d cluster(s)", *p.Spec.NumberOfClusters)
	}
	// The decisions the placement holds afterwards, as simulate prints them: when a cycle
	// fails after the scheduler chose, the placement keeps what it had.
	var selected []string
	for _, d := range r.Decisions {
		for _, cd := range d.Status.Decisions {
			selected = append(selected, cd.ClusterName)
		}
	}
	fmt.Fprintf(w, "  wants %s; selects %s\n", want, output.Clean(output.Or(strings.Join(selected, ", "), "none")))
	for _, t := range []string{clusterv1beta1.PlacementConditionSatisfied, clusterv1beta1.PlacementConditionMisconfigured} {
		if c := meta.FindStatusCondition(p.Status.Conditions, t); c != nil {
			fmt.Fprintf(w, "  %s=%s %s: %s\n", c.Type, c.Status, output.Clean(c.Reason), output.Clean(c.Message))
		}
	}
	if e.Error != "" {
		fmt.Fprintf(w, "  error: %s (the existing decisions are kept)\n", output.Clean(e.Error))
	}
	if e.Warning != "" {
		fmt.Fprintf(w, "  warning: %s\n", output.Clean(e.Warning))
	}
	if len(e.Clusters) == 0 {
		fmt.Fprintln(w, "  no cluster is available: check the placement's cluster sets and their bindings in its namespace")
		return nil
	}
	fmt.Fprintln(w)
	t := output.NewTable(w)
	t.Row("CLUSTER", "RESULT", "REJECTED BY", "REASON")
	for _, c := range e.Clusters {
		verdict := "feasible"
		switch {
		case c.Selected:
			verdict = "selected"
		case c.RejectedBy != "":
			verdict = "rejected"
		}
		reason := c.Reason
		if c.Stale {
			verdict += " (stale)"
		}
		if c.Note != "" {
			reason = strings.TrimSpace(reason + " " + c.Note)
		}
		t.Row(c.Name, verdict, output.Or(c.RejectedBy, "-"), output.Or(reason, "-"))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if err := printSplits(w, e.Splits); err != nil {
		return err
	}
	if len(e.PrioritizeResults) == 0 || !slices.ContainsFunc(e.Clusters, func(c scheduler.ClusterVerdict) bool { return c.Total != nil }) {
		return nil
	}
	fmt.Fprintln(w)
	t = output.NewTable(w)
	header := []string{"SCORES", "TOTAL"}
	for _, pr := range e.PrioritizeResults {
		header = append(header, fmt.Sprintf("%s(x%d)", pr.Name, pr.Weight))
	}
	t.Row(header...)
	for _, c := range e.Clusters {
		if c.Total == nil {
			continue
		}
		row := []string{c.Name, fmt.Sprint(*c.Total)}
		for _, pr := range e.PrioritizeResults {
			row = append(row, fmt.Sprint(c.Scores[pr.Name]))
		}
		t.Row(row...)
	}
	return t.Flush()
}

// printSplits prints how each split intent's replicas were divided: the clusters looked at,
// in the order they were filled, with what each could hold and its share.
func printSplits(w io.Writer, splits []scheduler.SplitExplanation) error {
	for _, sp := range splits {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "  HPAIntent %s splits %d replicas", output.Clean(sp.Intent), sp.Replicas)
		if sp.Unplaced > 0 {
			fmt.Fprintf(w, "; %d wait for room", sp.Unplaced)
		}
		fmt.Fprintln(w, ":")
		t := output.NewTable(w)
		t.Row("SPLIT", "HOLDS", "SHARE")
		for _, c := range sp.Clusters {
			holds := fmt.Sprint(c.Capacity)
			if c.Capacity < 0 {
				holds = "- (not needed)"
			}
			t.Row(c.Name, holds, fmt.Sprint(c.Share))
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	return nil
}
