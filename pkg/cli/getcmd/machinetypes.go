package getcmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// MachineTypesOptions are the options of `fleetfit get machinetypes`.
type MachineTypesOptions struct {
	Flags  *clientopts.Flags
	Output *output.Flags
	// Clusters are the clusters whose machine types are listed; AllClusters lists every
	// cluster's instead.
	Clusters    []string
	AllClusters bool
	// Files are fleet files to read instead of the hub.
	Files []string
	Now   func() time.Time
}

// MachineType is one machine type of one MachineGroup of one cluster, as its agent reports
// it: what -o yaml|json print, one per row of the table.
type MachineType struct {
	Cluster string `json:"cluster"`
	Group   string `json:"group"`
	// Ready is the group's Ready condition.
	Ready bool                             `json:"ready"`
	Name  string                           `json:"name"`
	Spec  fleetfitv1alpha1.MachineTypeSpec `json:"spec"`
	Usage fleetfitv1alpha1.MachineUsage    `json:"usage"`
}

func newMachineTypesCommand(flags *clientopts.Flags) *cobra.Command {
	o := &MachineTypesOptions{Flags: flags, Now: time.Now}
	c := &cobra.Command{
		Use:     "machinetypes [CLUSTER...]",
		Aliases: []string{"machinetype", "mt"},
		Short:   "List the machine types of the clusters' MachineGroups with their usage",
		Long: `List the machine types that the MachineGroups of managed clusters offer, as their fleetfit
agents report them in the clusters' inventories: one row per cluster, group and type, with
what one machine has (cpu, memory, GPUs) and how many machines the type keeps (MAXIMUM), how
many are reserved and free for a new guest at once (RESERVED), used by guests (USED), and
how many guests wait for a machine (WAITING). READY is the group's Ready condition.

Name clusters, or list every cluster's machine types with -A.`,
		Example: `  fleetfit get machinetypes -A --kubeconfig hub.kubeconfig
  fleetfit get machinetypes cluster1 -o yaml
  fleetfit get machinetypes -A -f deploy/examples/fleet.yaml`,
		RunE: func(c *cobra.Command, args []string) error {
			o.Clusters = args
			if err := o.Output.Validate(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(c.Context(), c.OutOrStdout())
		},
	}
	o.Output = output.AddFlags(c, output.Table, output.YAML, output.JSON)
	c.Flags().BoolVarP(&o.AllClusters, "all-clusters", "A", false, "list the machine types of every cluster")
	c.Flags().StringSliceVarP(&o.Files, "filename", "f", nil, "fleet files to read instead of the hub (see fleetfit simulate --help)")
	return c
}

// Validate checks that clusters are named, or -A given, not both.
func (o *MachineTypesOptions) Validate() error {
	switch {
	case o.AllClusters && len(o.Clusters) > 0:
		return errors.New("name clusters or give -A (every cluster), not both")
	case !o.AllClusters && len(o.Clusters) == 0:
		return errors.New("name the clusters whose machine types to list, or give -A for every cluster")
	}
	return nil
}

// Run prints the machine types.
func (o *MachineTypesOptions) Run(ctx context.Context, w io.Writer) error {
	fleet, err := loadFleet(ctx, o.Flags, o.Files, o.Now(), simulate.KindManagedClusters, simulate.KindClusterInventories)
	if err != nil {
		return err
	}
	types, err := o.machineTypes(fleet)
	if err != nil {
		return err
	}
	if o.Output.Structured() {
		if types == nil {
			types = []MachineType{}
		}
		return o.Output.PrintData(w, types)
	}
	t := output.NewTable(w)
	t.Row("CLUSTER", "GROUP", "TYPE", "CPU", "MEMORY", "GPU", "MAXIMUM", "RESERVED", "USED", "WAITING", "READY")
	for _, m := range types {
		u := m.Usage
		t.Row(m.Cluster, m.Group, m.Name,
			amount(corev1.ResourceCPU, m.Spec.CPU), amount(corev1.ResourceMemory, m.Spec.Memory), machineGPU(m.Spec.GPU),
			fmt.Sprint(u.Maximum), fmt.Sprint(u.Reserved), fmt.Sprint(u.Used), fmt.Sprint(u.Waiting), fmt.Sprint(m.Ready))
	}
	return t.Flush()
}

// machineTypes are the machine types of the clusters asked for, sorted by cluster, group and
// type name. A cluster named that the fleet does not have is an error; one without an
// inventory or machine groups has no rows.
func (o *MachineTypesOptions) machineTypes(fleet *simulate.Fleet) ([]MachineType, error) {
	known := map[string]bool{}
	for _, c := range fleet.Clusters {
		known[c.Name] = true
	}
	wanted := map[string]bool{}
	for _, name := range o.Clusters {
		if !known[name] {
			return nil, fmt.Errorf("there is no ManagedCluster %q", name)
		}
		wanted[name] = true
	}
	var types []MachineType
	for _, inv := range fleet.Inventories {
		// Only the agent's report counts, as on the hub.
		if !cache.InventoryName(inv) || !known[inv.Namespace] || (!o.AllClusters && !wanted[inv.Namespace]) {
			continue
		}
		for _, g := range inv.Status.MachineGroups {
			for _, t := range g.MachineTypes {
				types = append(types, MachineType{Cluster: inv.Namespace, Group: g.Name, Ready: g.Ready, Name: t.Name, Spec: t.Spec, Usage: t.Usage})
			}
		}
	}
	slices.SortFunc(types, func(a, b MachineType) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Group, b.Group), cmp.Compare(a.Name, b.Name))
	})
	return types, nil
}

// machineGPU is the GPU column: how many GPUs of which extended resource one machine has,
// and the model they are selected by, as "2 nvidia.com/gpu NVIDIA-GeForce-RTX-3090".
func machineGPU(g *fleetfitv1alpha1.MachineGPU) string {
	if g == nil || g.Num == 0 {
		return "-"
	}
	parts := []string{fmt.Sprint(g.Num), string(machinegroup.GPUResource(g))}
	switch {
	case g.Product != "":
		parts = append(parts, g.Product)
	case g.Family != "":
		parts = append(parts, "family="+g.Family)
	case g.Machine != "":
		parts = append(parts, "machine="+g.Machine)
	}
	return strings.Join(parts, " ")
}
