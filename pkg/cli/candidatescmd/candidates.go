// Package candidatescmd holds `fleetfit candidates`: OpenStack Placement's GET
// /allocation_candidates over the fleet — which clusters, and which nodes in them, could take a
// request now — answered by the code the hub's endpoint runs, over the fleet as the hub holds
// it or as fleet files describe it.
package candidatescmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetfit/fleetfit/pkg/allocationcandidates"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// Options are the options of `fleetfit candidates`.
type Options struct {
	Flags  *clientopts.Flags
	Output *output.Flags
	Files  []string
	Now    func() time.Time

	// Limits bound the answer and the search, as on the hub.
	Limits allocationcandidates.Limits

	RawQuery string
	query    *allocationcandidates.Query
}

// NewCommand returns `fleetfit candidates`.
func NewCommand(flags *clientopts.Flags) *cobra.Command {
	o := &Options{Flags: flags, Now: time.Now, Limits: allocationcandidates.DefaultLimits()}
	c := &cobra.Command{
		Use:   "candidates QUERY",
		Short: "List the clusters and nodes that could take a request now (OpenStack's allocation candidates)",
		Long: `Answer OpenStack Placement's GET /allocation_candidates over the fleet: QUERY is its query
string (microversion 1.36) — resources, required, numbered resourcesN and requiredN,
member_of, group_policy=none|isolate and limit. A cluster is a root provider; its nodes are
child providers <cluster>/<shape>/<i>, the i-th node of an inventory shape. Resource classes
are Kubernetes resource names (cpu:500m, memory:4Gi, nvidia.com/gpu:1) or VCPU, MEMORY_MB and
DISK_GB; traits are node labels (key, key=value, !key, !key=value, in:a,b), HW_CPU_X86_<FLAG>
meaning feature.node.kubernetes.io/cpu-cpuid.<FLAG>=true; member_of names ManagedClusterSets.

The fleet is read from the hub (as explain and simulate read it) or from fleet files with -f,
and answered by the same code as the hub's /allocation_candidates endpoint. Capacity the hub
holds for brand-new decisions (in-flight reservations) is only visible to the endpoint.

As on the hub, an answer holds at most --max-candidates candidates (and says when there are
more), and a query whose search needs more than --work-budget steps is refused, naming what
to change.`,
		Example: `  fleetfit candidates 'resources=VCPU:8,MEMORY_MB:16384' --kubeconfig hub.kubeconfig
  fleetfit candidates 'resources1=cpu:8,nvidia.com/gpu:1&required1=nvidia.com/gpu.product=A100-SXM4-80GB&resources2=cpu:4&group_policy=isolate' -f deploy/examples/fleet.yaml
  fleetfit candidates 'resources=cpu:2&required=in:HW_CPU_X86_AVX512F,intel.feature.node.kubernetes.io/qat&limit=5' -f fleet.yaml -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context(), c.OutOrStdout())
		},
	}
	o.Output = output.AddFlags(c, output.Table, output.YAML, output.JSON)
	c.Flags().IntVar(&o.Limits.MaxCandidates, "max-candidates", o.Limits.MaxCandidates, "the most candidates an answer holds; a larger limit is lowered to it, and the answer says when there are more")
	c.Flags().Int64Var(&o.Limits.WorkBudget, "work-budget", o.Limits.WorkBudget, "the most search steps a query may take; a query that needs more is refused")
	c.Flags().StringSliceVarP(&o.Files, "filename", "f", nil, "fleet files to read instead of the hub (see fleetfit simulate --help)")
	return c
}

// Complete takes the query from the arguments.
func (o *Options) Complete(args []string) error {
	o.RawQuery = args[0]
	return nil
}

// Validate checks the output format and parses the query: a bad query is an error naming the
// parameter, before any fleet is read.
func (o *Options) Validate() error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if o.Limits.MaxCandidates < 1 {
		return fmt.Errorf("--max-candidates must be positive, got %d", o.Limits.MaxCandidates)
	}
	if o.Limits.WorkBudget < 1 {
		return fmt.Errorf("--work-budget must be positive, got %d", o.Limits.WorkBudget)
	}
	q, err := allocationcandidates.ParseQuery(o.RawQuery)
	if err != nil {
		return err
	}
	o.query = q
	return nil
}

// Run reads the fleet and prints the candidates.
func (o *Options) Run(ctx context.Context, w io.Writer) error {
	fleet, now, err := simulate.Load(ctx, o.Files, o.Flags.RESTConfig, o.Now())
	if err != nil {
		return err
	}
	c := cache.New()
	c.Load(fleet.Objects)
	// The capacity that the hub's latest decisions hold until their pods show (persisted in
	// the intents' status) is not free, here as on the hub's own endpoint.
	placement.RestoreReservations(c, fleet.Intents, now, placement.DefaultReservationTimeout)
	resp, err := allocationcandidates.Evaluate(ctx, c.Snapshot(), o.query, now, o.Limits)
	if err != nil {
		return err
	}
	if o.Output.Structured() {
		return o.Output.PrintData(w, resp)
	}
	return printTable(w, o.query, resp)
}
