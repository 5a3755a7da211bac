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
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// featurePrefixes are stripped from feature labels to name them briefly.
var featurePrefixes = []string{"feature.node.kubernetes.io/cpu-cpuid.", "feature.node.kubernetes.io/"}

// maxFeatures is how many features a table row names (-o wide names all).
const maxFeatures = 4

// ClustersOptions are the options of `fleetfit get clusters`.
type ClustersOptions struct {
	Flags  *clientopts.Flags
	Output *output.Flags
	// Files are fleet files to read instead of the hub.
	Files []string
	// InventoryStaleAfter is the hub's --inventory-stale-after: an inventory older than it is
	// marked stale. The hub publishes it nowhere, so the caller passes it; zero is the hub's
	// default, fleetfitv1alpha1.DefaultInventoryStaleAfter.
	InventoryStaleAfter time.Duration
	Now                 func() time.Time
}

func newClustersCommand(flags *clientopts.Flags) *cobra.Command {
	o := &ClustersOptions{Flags: flags, Now: time.Now}
	c := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster", "managedclusters"},
		Short:   "List the managed clusters with what their nodes really have free",
		Long: `List the managed clusters with what their fleetfit agents report: nodes (ready/total), free and
allocatable cpu and memory, GPUs free/allocatable by model, notable node features, the
age of the inventory, and how the agent runs: as OCM's fleetfit-agent add-on, with the health
OCM gives it (add-on available, unhealthy or unreachable), "installed" without the add-on, or
"none". Free amounts count only schedulable nodes.

An inventory older than --inventory-stale-after is marked stale: the hub keeps the cluster's
decisions, and gives it no new ones until its agent reports again. The hub does not publish
the threshold it runs with, so this command cannot read it: the flag's default is the hub's
default (10m); when fleetfit-hub runs with another --inventory-stale-after, pass the same
value here.`,
		Example: `  fleetfit get clusters --kubeconfig hub.kubeconfig
  fleetfit get clusters --kubeconfig hub.kubeconfig --inventory-stale-after 30m
  fleetfit get clusters -f deploy/examples/fleet.yaml -o wide`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := o.Output.Validate(); err != nil {
				return err
			}
			if o.InventoryStaleAfter <= 0 {
				return fmt.Errorf("--inventory-stale-after must be positive, not %s", o.InventoryStaleAfter)
			}
			return o.Run(c.Context(), c.OutOrStdout())
		},
	}
	o.Output = output.AddFlags(c, output.Table, output.Wide, output.YAML, output.JSON)
	c.Flags().StringSliceVarP(&o.Files, "filename", "f", nil, "fleet files to read instead of the hub (see fleetfit simulate --help)")
	c.Flags().DurationVar(&o.InventoryStaleAfter, "inventory-stale-after", fleetfitv1alpha1.DefaultInventoryStaleAfter,
		"the --inventory-stale-after fleetfit-hub runs with: an inventory older than this is marked stale")
	return c
}

// Run prints the clusters.
func (o *ClustersOptions) Run(ctx context.Context, w io.Writer) error {
	// One moment for reading and for ages: inventories built from a file's Nodes are observed
	// now, and read as 0s old however long reading took.
	now := o.Now()
	fleet, err := loadFleet(ctx, o.Flags, o.Files, now, simulate.KindManagedClusters, simulate.KindClusterInventories)
	if err != nil {
		return err
	}
	clusters := slices.Clone(fleet.Clusters)
	slices.SortFunc(clusters, func(a, b *clusterv1.ManagedCluster) int { return cmp.Compare(a.Name, b.Name) })
	inventories := Inventories(fleet)
	if o.Output.Structured() {
		var objs []runtime.Object
		for _, c := range clusters {
			c.SetGroupVersionKind(clusterv1.SchemeGroupVersion.WithKind("ManagedCluster"))
			objs = append(objs, c)
			if inv := inventories[c.Name]; inv != nil {
				inv.SetGroupVersionKind(fleetfitv1alpha1.SchemeGroupVersion.WithKind("ClusterInventory"))
				objs = append(objs, inv)
			}
		}
		return o.Output.PrintObject(w, output.List(objs...))
	}
	wide := o.Output.Format == output.Wide
	t := output.NewTable(w)
	header := []string{"NAME", "AVAILABLE", "NODES", "CPU FREE/ALLOC", "MEMORY FREE/ALLOC", "GPUS FREE/ALLOC", "MACHINES FREE/MAX", "CAN ADD", "FEATURES", "INVENTORY", "AGENT"}
	if wide {
		header = append(header, "OTHER RESOURCES FREE/ALLOC", "LABELS")
	}
	t.Row(header...)
	for _, c := range clusters {
		inv := inventories[c.Name]
		r := o.Row(c, inv, now, wide)
		row := []string{r.Name, r.Available, r.Nodes, r.CPU, r.Memory, r.GPUs, r.Machines, r.CanAdd, r.Features, r.Inventory, r.Agent}
		if wide {
			other := "-"
			if inv != nil {
				other = otherResources(&inv.Status)
			}
			row = append(row, other, labels(c.Labels))
		}
		t.Row(row...)
	}
	return t.Flush()
}

// Inventories are the fleet's ClusterInventories by cluster name: only the agent's report of
// each cluster counts, as on the hub.
func Inventories(fleet *simulate.Fleet) map[string]*fleetfitv1alpha1.ClusterInventory {
	inventories := map[string]*fleetfitv1alpha1.ClusterInventory{}
	for _, inv := range fleet.Inventories {
		if cache.InventoryName(inv) {
			inventories[inv.Namespace] = inv
		}
	}
	return inventories
}

// ClusterRow is one cluster as the table of `get clusters` shows it, column by column.
type ClusterRow struct {
	Name      string `json:"name"`
	Available string `json:"available"`
	Nodes     string `json:"nodes"`
	CPU       string `json:"cpu"`
	Memory    string `json:"memory"`
	GPUs      string `json:"gpus"`
	Machines  string `json:"machines"`
	// CanAdd is what the cluster's autoscaling pools can add: "gpu: 3 g6.12xlarge".
	CanAdd    string `json:"canAdd"`
	Features  string `json:"features"`
	Inventory string `json:"inventory"`
	Agent     string `json:"agent"`
}

// Row is cluster c with its agent's inventory inv (nil when it has none) as the table shows it
// at now; wide names every feature and machine group. fleetfit ui shows the same text.
func (o *ClustersOptions) Row(c *clusterv1.ManagedCluster, inv *fleetfitv1alpha1.ClusterInventory, now time.Time, wide bool) ClusterRow {
	r := ClusterRow{Name: c.Name, Available: available(c), Agent: o.agent(c, inv)}
	if inv == nil {
		r.Nodes, r.CPU, r.Memory, r.GPUs, r.Machines, r.CanAdd, r.Features = "-", "-", "-", "-", "-", "-", "-"
		r.Inventory = o.noInventory(c)
		return r
	}
	st := &inv.Status
	r.Nodes = fmt.Sprintf("%d/%d", st.ReadyNodeCount, st.NodeCount)
	r.CPU = freeOfAllocatable(st, corev1.ResourceCPU)
	r.Memory = freeOfAllocatable(st, corev1.ResourceMemory)
	r.GPUs = gpus(st)
	r.Machines = machines(st, wide)
	r.CanAdd = canAdd(st)
	r.Features = features(st, wide)
	r.Inventory = inventoryAge(st.ObservedAt.Time, now, o.staleAfter())
	return r
}

// noInventory says why a cluster has no inventory: on a hub, its agent (the add-on) has not
// reported yet, or it has no agent; in fleet files, the files describe none of its nodes.
func (o *ClustersOptions) noInventory(c *clusterv1.ManagedCluster) string {
	if len(o.Files) > 0 {
		return "none: the files give no Nodes or ClusterInventory for it"
	}
	if _, enabled := framework.AgentAddOn(c); enabled {
		return "none yet"
	}
	return "none: no fleetfit agent"
}

// agent says how the cluster's fleetfit agent runs: as OCM's fleetfit-agent add-on, with the
// health OCM labels the cluster with; "installed" when it reports without the add-on
// (fleetfit install agent); "none" when nothing says there is one. Fleet files build
// inventories from Nodes, which says nothing of an agent: "-" there, unless the add-on label
// is in the files.
func (o *ClustersOptions) agent(c *clusterv1.ManagedCluster, inv *fleetfitv1alpha1.ClusterInventory) string {
	if health, enabled := framework.AgentAddOn(c); enabled {
		return "add-on " + output.Or(health, "unknown")
	}
	if len(o.Files) > 0 {
		return "-"
	}
	if inv != nil {
		return "installed"
	}
	return "none"
}

// staleAfter is the hub's --inventory-stale-after as the caller gave it, or its default.
func (o *ClustersOptions) staleAfter() time.Duration {
	if o.InventoryStaleAfter > 0 {
		return o.InventoryStaleAfter
	}
	return fleetfitv1alpha1.DefaultInventoryStaleAfter
}

// inventoryAge is how old the inventory is, marked stale past the hub's
// --inventory-stale-after (staleAfter): the cluster keeps its decisions but gets no new ones.
func inventoryAge(observed, now time.Time, staleAfter time.Duration) string {
	age := output.Age(observed, now) + " ago"
	if now.Sub(observed) > staleAfter {
		age += " (stale)"
	}
	return age
}

// available is the ManagedCluster's Available condition, as `kubectl get managedclusters`
// shows it.
func available(c *clusterv1.ManagedCluster) string {
	if cond := meta.FindStatusCondition(c.Status.Conditions, clusterv1.ManagedClusterConditionAvailable); cond != nil {
		return string(cond.Status)
	}
	return "Unknown"
}

func totals(st *fleetfitv1alpha1.ClusterInventoryStatus, name corev1.ResourceName) (fleetfitv1alpha1.ResourceTotals, bool) {
	for _, r := range st.Resources {
		if r.Name == name {
			return r, true
		}
	}
	return fleetfitv1alpha1.ResourceTotals{}, false
}

func freeOfAllocatable(st *fleetfitv1alpha1.ClusterInventoryStatus, name corev1.ResourceName) string {
	r, ok := totals(st, name)
	if !ok {
		return "-"
	}
	return amount(name, r.Free) + "/" + amount(name, r.Allocatable)
}

func gpus(st *fleetfitv1alpha1.ClusterInventoryStatus) string {
	var parts []string
	for _, g := range inventory.GPUs {
		for _, m := range inventory.AmountsByModel(st, g.Resource, g.ModelLabel) {
			parts = append(parts, fmt.Sprintf("%s %d/%d", output.Or(m.Model, string(g.Resource)), m.Free, m.Allocatable))
		}
	}
	for _, m := range inventory.DevicesByModel(st) {
		parts = append(parts, fmt.Sprintf("%s (DRA) %d/%d", m.Model, m.Free, m.Allocatable))
	}
	return output.Or(strings.Join(parts, ", "), "-")
}

// canAdd is the nodes the cluster's ready autoscaling pools can add, per pool and shape:
// "gpu: 3 g6.12xlarge, 1 g6.48xlarge".
func canAdd(st *fleetfitv1alpha1.ClusterInventoryStatus) string {
	var parts []string
	last := ""
	for _, r := range inventory.PoolRooms(st) {
		item := fmt.Sprintf("%d %s", r.Nodes, r.Shape)
		if r.Pool != last {
			item = r.Pool + ": " + item
			last = r.Pool
		}
		parts = append(parts, item)
	}
	return output.Or(strings.Join(parts, ", "), "-")
}

// isDevice reports whether name is a device resource shown in the GPU column: a GPU's
// extended resource, or a kind of DRA devices.
func isDevice(name corev1.ResourceName) bool {
	return inventory.IsDeviceResource(name) || slices.ContainsFunc(inventory.GPUs, func(d inventory.Device) bool { return d.Resource == name })
}

// features names the node features of the inventory: feature labels set to "true" (without
// Node Feature Discovery's prefixes) and the extended resources other than GPUs.
func features(st *fleetfitv1alpha1.ClusterInventoryStatus, all bool) string {
	seen := map[string]bool{}
	for _, s := range st.NodeShapes {
		for k, v := range s.Labels {
			for _, p := range featurePrefixes {
				if short, ok := strings.CutPrefix(k, p); ok && v == "true" {
					seen[short] = true
					break
				}
			}
		}
	}
	for _, r := range st.Resources {
		if strings.Contains(string(r.Name), "/") && !isDevice(r.Name) && !strings.HasPrefix(string(r.Name), corev1.ResourceHugePagesPrefix) && !r.Allocatable.IsZero() {
			seen[string(r.Name)] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	if !all && len(names) > maxFeatures {
		names = append(names[:maxFeatures], fmt.Sprintf("+%d", len(names)-maxFeatures))
	}
	return output.Or(strings.Join(names, ","), "-")
}

func otherResources(st *fleetfitv1alpha1.ClusterInventoryStatus) string {
	var parts []string
	for _, r := range st.Resources {
		switch r.Name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods:
			continue
		}
		if isDevice(r.Name) || r.Allocatable.IsZero() {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%s/%s", r.Name, amount(r.Name, r.Free), amount(r.Name, r.Allocatable)))
	}
	return output.Or(strings.Join(parts, ","), "-")
}

func labels(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return output.Or(strings.Join(parts, ","), "<none>")
}

// loadFleet reads the fleet from files when given, else the kinds named from the hub.
func loadFleet(ctx context.Context, flags *clientopts.Flags, files []string, now time.Time, kinds ...string) (*simulate.Fleet, error) {
	if len(files) == 0 {
		cfg, err := flags.RESTConfig()
		if err != nil {
			return nil, err
		}
		return simulate.FromHub(ctx, cfg, kinds...)
	}
	return simulate.ReadFiles(ctx, files, simulate.ReadOptions{Now: now})
}
