package getcmd

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// maxClusters is how many decided clusters a table row names (-o wide names all).
const maxClusters = 3

// PlacementsOptions are the options of `fleetfit get placements`.
type PlacementsOptions struct {
	Flags         *clientopts.Flags
	Output        *output.Flags
	AllNamespaces bool
	Files         []string
	Now           func() time.Time
}

func newPlacementsCommand(flags *clientopts.Flags) *cobra.Command {
	o := &PlacementsOptions{Flags: flags, Now: time.Now}
	c := &cobra.Command{
		Use:     "placements",
		Aliases: []string{"placement"},
		Short:   "List Placements with their selected clusters, conditions and HPAIntents",
		Example: `  fleetfit get placements -A --kubeconfig hub.kubeconfig
  fleetfit get placements -n demo -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Output.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context(), c.OutOrStdout())
		},
	}
	o.Output = output.AddFlags(c, output.Table, output.Wide, output.YAML, output.JSON)
	c.Flags().BoolVarP(&o.AllNamespaces, "all-namespaces", "A", false, "list the placements of every namespace")
	c.Flags().StringSliceVarP(&o.Files, "filename", "f", nil, "fleet files to read instead of the hub")
	return c
}

// Run prints the placements.
func (o *PlacementsOptions) Run(ctx context.Context, w io.Writer) error {
	ns := ""
	if !o.AllNamespaces {
		var err error
		if ns, _, err = o.Flags.Namespace(); err != nil {
			return err
		}
	}
	fleet, err := loadFleet(ctx, o.Flags, o.Files, o.Now(), simulate.KindPlacements, simulate.KindDecisions, simulate.KindIntents)
	if err != nil {
		return err
	}
	var placements []*clusterv1beta1.Placement
	for _, p := range fleet.Placements {
		if ns == "" || p.Namespace == ns {
			placements = append(placements, p)
		}
	}
	slices.SortFunc(placements, func(a, b *clusterv1beta1.Placement) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	decided := decidedClusters(fleet)
	if o.Output.Structured() {
		objs := make([]runtime.Object, 0, len(placements))
		for _, p := range placements {
			p.SetGroupVersionKind(clusterv1beta1.SchemeGroupVersion.WithKind("Placement"))
			objs = append(objs, p)
		}
		return o.Output.PrintObject(w, output.List(objs...))
	}
	wide := o.Output.Format == output.Wide
	t := output.NewTable(w)
	header := []string{"NAME", "SELECTED", "CLUSTERS", "SATISFIED", "REASON", "HPAINTENTS", "AGE"}
	if o.AllNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if wide {
		header = append(header, "MESSAGE")
	}
	t.Row(header...)
	now := o.Now()
	for _, p := range placements {
		clusters := decided[p.Namespace+"/"+p.Name]
		shown := clusters
		if !wide && len(shown) > maxClusters {
			shown = append(slices.Clone(shown[:maxClusters]), fmt.Sprintf("+%d", len(clusters)-maxClusters))
		}
		satisfied, reason, message := Satisfied(p)
		row := []string{p.Name, Selected(p, len(clusters)), output.Or(strings.Join(shown, ","), "-"),
			satisfied, reason, intentsOf(fleet.Intents, p, len(o.Files) == 0), output.Age(p.CreationTimestamp.Time, now)}
		if o.AllNamespaces {
			row = append([]string{p.Namespace}, row...)
		}
		if wide {
			row = append(row, message)
		}
		t.Row(row...)
	}
	return t.Flush()
}

// Selected prints how many clusters a placement selects of how many it wants, as "1/3" or
// "4/all".
func Selected(p *clusterv1beta1.Placement, selected int) string {
	want := "all"
	if p.Spec.NumberOfClusters != nil {
		want = fmt.Sprint(*p.Spec.NumberOfClusters)
	}
	return fmt.Sprintf("%d/%s", selected, want)
}

// Satisfied is a placement's PlacementSatisfied condition as a table shows it, or False with
// the Misconfigured reason when the placement is misconfigured.
func Satisfied(p *clusterv1beta1.Placement) (status, reason, message string) {
	status, reason = "Unknown", "-"
	if c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionSatisfied); c != nil {
		status, reason, message = string(c.Status), c.Reason, c.Message
	}
	if c := meta.FindStatusCondition(p.Status.Conditions, clusterv1beta1.PlacementConditionMisconfigured); c != nil && c.Status == "True" {
		status, reason, message = "False", c.Reason, c.Message
	}
	return status, reason, message
}

// decidedClusters are the clusters of each placement's PlacementDecisions, in name order.
func decidedClusters(f *simulate.Fleet) map[string][]string {
	out := map[string][]string{}
	for _, d := range f.Decisions {
		p := d.Labels[clusterv1beta1.PlacementLabel]
		if p == "" {
			continue
		}
		key := d.Namespace + "/" + p
		for _, cd := range d.Status.Decisions {
			out[key] = append(out[key], cd.ClusterName)
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// intentsOf names the HPAIntents that shape a placement with their Scheduled and Delivered
// state, as "fwall (Scheduled,Delivered)", and the clusters their workloads are moving away
// from (status.moves not completed), as "MovingFrom=cluster2". They are the ones the scheduler reads
// (hpa.IntentsOf): on a hub (fromHub) the placement controller's, which follow the placement
// an intent last shaped; in fleet files simulate's, which schedule each placement as on a
// first pass.
func intentsOf(all []*fleetfitv1alpha1.HPAIntent, p *clusterv1beta1.Placement, fromHub bool) string {
	var parts []string
	for _, in := range hpa.IntentsOf(p.Namespace, p.Name, all, fromHub) {
		states := IntentStates(in)
		parts = append(parts, fmt.Sprintf("%s (%s)", in.Name, output.Or(strings.Join(states, ","), "pending")))
	}
	slices.Sort(parts)
	return output.Or(strings.Join(parts, ", "), "-")
}

// IntentStates are an HPAIntent's Scheduled and Delivered conditions as the table names them
// (Scheduled, NotDelivered, NotValid when it is invalid), then for a split intent its shares
// as "Split=cluster1:4/cluster3:8" and the replicas that wait as "Unplaced=2", then the
// clusters its workload is moving away from (status.moves not completed), as
// "MovingFrom=cluster2".
func IntentStates(in *fleetfitv1alpha1.HPAIntent) []string {
	var states []string
	for _, t := range []string{fleetfitv1alpha1.ConditionValid, fleetfitv1alpha1.ConditionScheduled, fleetfitv1alpha1.ConditionDelivered} {
		c := meta.FindStatusCondition(in.Status.Conditions, t)
		switch {
		case c == nil:
		case c.Status == "True" && t != fleetfitv1alpha1.ConditionValid:
			states = append(states, t)
		case c.Status == "False":
			states = append(states, "Not"+t)
		}
	}
	if sp := in.Status.Split; in.Spec.Split != nil && sp != nil {
		// How its replicas are divided: "Split=cluster1:4/cluster3:8", and those that wait.
		shares := make([]string, 0, len(sp.Shares))
		for _, sh := range sp.Shares {
			shares = append(shares, fmt.Sprintf("%s:%d", sh.ClusterName, sh.Replicas))
		}
		states = append(states, "Split="+output.Or(strings.Join(shares, "/"), "none"))
		if sp.Unplaced > 0 {
			states = append(states, fmt.Sprintf("Unplaced=%d", sp.Unplaced))
		}
	}
	for _, m := range in.Status.MovingFrom() {
		// Its pods stayed unschedulable there; the cluster keeps the workload until it is
		// available where it moves.
		states = append(states, "MovingFrom="+m.From)
	}
	return states
}
