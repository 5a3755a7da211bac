package ui

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/getcmd"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// Fleet is the answer of GET /api/fleet: one page of the clusters, in name order, with the
// fleet's totals.
type Fleet struct {
	// ReadAt is when the hub was read: the time of everything shown.
	ReadAt time.Time `json:"readAt"`
	Hub    string    `json:"hub"`
	// Clusters is how many clusters the hub has; Matching how many pass the page's filter;
	// Offset and Limit which of those Items are.
	Clusters int `json:"clusters"`
	Matching int `json:"matching"`
	Offset   int `json:"offset"`
	Limit    int `json:"limit"`
	// Totals are the fleet's free and allocatable amounts, over every cluster.
	Totals Totals `json:"totals"`
	// Models are the GPU models of the fleet, for the fit filter.
	Models []GPUModel `json:"models"`
	// Fit is the request the clusters were checked against, with how many clusters it fits;
	// nil when the page asked none.
	Fit   *FitAnswer       `json:"fit,omitempty"`
	Items []ClusterSummary `json:"items"`
}

// Totals sum the clusters' inventories.
type Totals struct {
	WithInventory int        `json:"withInventory"`
	Stale         int        `json:"stale"`
	CPU           Amounts    `json:"cpu"`
	Memory        Amounts    `json:"memory"`
	GPUs          []GPUCount `json:"gpus"`
}

// Amounts are free and allocatable amounts of one resource: Text as the tables print them,
// Free and Allocatable as Kubernetes writes them, FreeMilli and AllocatableMilli for drawing.
type Amounts struct {
	Text             string `json:"text"`
	Free             string `json:"free"`
	Allocatable      string `json:"allocatable"`
	FreeMilli        int64  `json:"freeMilli"`
	AllocatableMilli int64  `json:"allocatableMilli"`
}

// GPUModel is a GPU resource and one model of it.
type GPUModel struct {
	Resource corev1.ResourceName `json:"resource"`
	Model    string              `json:"model"`
}

// GPUCount is how many GPUs of one model are free and allocatable (inventory.AmountsByModel).
type GPUCount struct {
	GPUModel
	Free        int64 `json:"free"`
	Allocatable int64 `json:"allocatable"`
	Nodes       int32 `json:"nodes"`
}

// ClusterSummary is one cluster: Row as `fleetfit get clusters` prints it, then the amounts
// behind it and what is free on single nodes.
type ClusterSummary struct {
	Name string            `json:"name"`
	Row  getcmd.ClusterRow `json:"row"`
	// HasInventory is false when its agent has not reported; the rest is then empty.
	HasInventory bool       `json:"hasInventory"`
	InventoryAt  time.Time  `json:"inventoryAt,omitempty"`
	Stale        bool       `json:"stale"`
	CPU          *Amounts   `json:"cpu,omitempty"`
	Memory       *Amounts   `json:"memory,omitempty"`
	GPUs         []GPUCount `json:"gpus,omitempty"`
	// Largest is the most room on one node: the node with the most GPUs free, then the most
	// cpu, then memory.
	Largest *Block `json:"largest,omitempty"`
	// Tiles are its schedulable nodes, one tile per distinct free amount with how many nodes
	// have it, at most MaxTiles; OmittedNodes counts the nodes of the tiles left out.
	Tiles        []Tile `json:"tiles,omitempty"`
	OmittedNodes int64  `json:"omittedNodes,omitempty"`
	// Fit says whether the page's request fits on one node here now; nil without a request.
	Fit *ClusterFit `json:"fit,omitempty"`
}

// Block is what is free at once on one node.
type Block struct {
	Text     string `json:"text"`
	GPUs     int64  `json:"gpus"`
	GPUModel string `json:"gpuModel,omitempty"`
	CPU      string `json:"cpu"`
	Memory   string `json:"memory"`
}

// Tile is Count schedulable nodes of one shape with the same free amounts, as the agent's
// report guarantees them (each of the Count nodes has at least that much free).
type Tile struct {
	Count int64 `json:"count"`
	// GPUs free on each node of the tile, of GPUsAllocatable; GPUModel their model.
	GPUs            int64  `json:"gpus"`
	GPUsAllocatable int64  `json:"gpusAllocatable"`
	GPUModel        string `json:"gpuModel,omitempty"`
	// CPU and Memory are free and allocatable on each node, in milli-units (memory in
	// milli-bytes, as Kubernetes counts it): the page draws them and formats its tooltips.
	CPU     MilliAmounts `json:"cpu"`
	Memory  MilliAmounts `json:"memory"`
	Tainted bool         `json:"tainted"`
}

// MilliAmounts are a free and an allocatable amount in milli-units.
type MilliAmounts struct {
	Free        int64 `json:"free"`
	Allocatable int64 `json:"allocatable"`
}

// summaries is what a clusters snapshot derives once: every cluster's summary, in name
// order, with its inventory's View for fit questions, and the fleet's totals.
type summaries struct {
	items  []ClusterSummary
	views  []*inventory.View // nil for clusters without inventory
	totals Totals
	models []GPUModel
}

func (s *Server) summaries(snap *snapshot) *summaries {
	return snap.derive(func(snap *snapshot) any {
		return summarize(snap.fleet.Clusters, getcmd.Inventories(snap.fleet), snap.readAt, s.opts.InventoryStaleAfter)
	}).(*summaries)
}

// summarize computes every cluster's summary, in name order.
func summarize(all []*clusterv1.ManagedCluster, inventories map[string]*fleetfitv1alpha1.ClusterInventory, now time.Time, staleAfter time.Duration) *summaries {
	clusters := slices.Clone(all)
	slices.SortFunc(clusters, func(a, b *clusterv1.ManagedCluster) int { return cmp.Compare(a.Name, b.Name) })
	rows := &getcmd.ClustersOptions{InventoryStaleAfter: staleAfter}
	out := &summaries{items: make([]ClusterSummary, len(clusters)), views: make([]*inventory.View, len(clusters))}
	var cpuFree, cpuAlloc, memFree, memAlloc resource.Quantity
	gpus := map[GPUModel]*GPUCount{}
	for i, c := range clusters {
		inv := inventories[c.Name]
		sum := ClusterSummary{Name: c.Name, Row: rows.Row(c, inv, now, false)}
		if inv != nil {
			st := &inv.Status
			sum.HasInventory = true
			sum.InventoryAt = st.ObservedAt.Time
			sum.Stale = now.Sub(st.ObservedAt.Time) > staleAfter
			sum.CPU = amountsOf(st, corev1.ResourceCPU, sum.Row.CPU)
			sum.Memory = amountsOf(st, corev1.ResourceMemory, sum.Row.Memory)
			sum.GPUs = gpuCounts(st)
			view := inventory.NewView(st)
			out.views[i] = view
			sum.Largest, sum.Tiles, sum.OmittedNodes = nodeRoom(st, view)
			out.totals.WithInventory++
			if sum.Stale {
				out.totals.Stale++
			}
			addTotals(st, corev1.ResourceCPU, &cpuFree, &cpuAlloc)
			addTotals(st, corev1.ResourceMemory, &memFree, &memAlloc)
			for _, g := range sum.GPUs {
				t := gpus[g.GPUModel]
				if t == nil {
					t = &GPUCount{GPUModel: g.GPUModel}
					gpus[g.GPUModel] = t
				}
				t.Free += g.Free
				t.Allocatable += g.Allocatable
				t.Nodes += g.Nodes
			}
		}
		out.items[i] = sum
	}
	out.totals.CPU = amounts(corev1.ResourceCPU, cpuFree, cpuAlloc)
	out.totals.Memory = amounts(corev1.ResourceMemory, memFree, memAlloc)
	for m, t := range gpus {
		out.models = append(out.models, m)
		out.totals.GPUs = append(out.totals.GPUs, *t)
	}
	byModel := func(a, b GPUModel) int {
		return cmp.Or(cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Model, b.Model))
	}
	slices.SortFunc(out.models, byModel)
	slices.SortFunc(out.totals.GPUs, func(a, b GPUCount) int { return byModel(a.GPUModel, b.GPUModel) })
	return out
}

func totalsOf(st *fleetfitv1alpha1.ClusterInventoryStatus, name corev1.ResourceName) (fleetfitv1alpha1.ResourceTotals, bool) {
	for _, r := range st.Resources {
		if r.Name == name {
			return r, true
		}
	}
	return fleetfitv1alpha1.ResourceTotals{}, false
}

func addTotals(st *fleetfitv1alpha1.ClusterInventoryStatus, name corev1.ResourceName, free, alloc *resource.Quantity) {
	if r, ok := totalsOf(st, name); ok {
		free.Add(r.Free)
		alloc.Add(r.Allocatable)
	}
}

// amountsOf is the inventory's free and allocatable amount of name, with text, the column of
// `get clusters` that prints them; nil when the inventory has none.
func amountsOf(st *fleetfitv1alpha1.ClusterInventoryStatus, name corev1.ResourceName, text string) *Amounts {
	r, ok := totalsOf(st, name)
	if !ok {
		return nil
	}
	return &Amounts{
		Text: text, Free: r.Free.String(), Allocatable: r.Allocatable.String(),
		FreeMilli: inventory.MilliOf(r.Free), AllocatableMilli: inventory.MilliOf(r.Allocatable),
	}
}

func amounts(name corev1.ResourceName, free, alloc resource.Quantity) Amounts {
	return Amounts{
		Text:        getcmd.Amount(name, free) + "/" + getcmd.Amount(name, alloc),
		Free:        free.String(),
		Allocatable: alloc.String(),
		FreeMilli:   inventory.MilliOf(free), AllocatableMilli: inventory.MilliOf(alloc),
	}
}

// gpuCounts are the GPUs of the inventory by model, as the GPUS column of `get clusters`
// counts them.
func gpuCounts(st *fleetfitv1alpha1.ClusterInventoryStatus) []GPUCount {
	var out []GPUCount
	for _, g := range inventory.GPUs {
		for _, m := range inventory.AmountsByModel(st, g.Resource, g.ModelLabel) {
			out = append(out, GPUCount{GPUModel: GPUModel{Resource: g.Resource, Model: m.Model}, Free: m.Free, Allocatable: m.Allocatable, Nodes: m.Nodes})
		}
	}
	return out
}

// nodeRoom reads the schedulable nodes of a report, as the View's Allocation lists them
// (inventory.Allocation.AppendFreeNodes): the largest free block on one node, and the tiles
// of the picture.
func nodeRoom(st *fleetfitv1alpha1.ClusterInventoryStatus, view *inventory.View) (*Block, []Tile, int64) {
	allocatable := map[string]corev1.ResourceList{}
	for i := range st.NodeShapes {
		allocatable[st.NodeShapes[i].Name] = st.NodeShapes[i].Allocatable
	}
	var (
		largest *Block
		best    [3]int64
		tiles   []Tile
		omitted int64
		runs    = view.Allocate().AppendFreeNodes(nil)
	)
	for i := range runs {
		run := &runs[i]
		gpuRes, model, gpus := gpusOn(run)
		cpu, mem := run.Free(corev1.ResourceCPU), run.Free(corev1.ResourceMemory)
		if key := [3]int64{gpus, cpu, mem}; largest == nil || slices.Compare(key[:], best[:]) > 0 {
			best = key
			largest = &Block{GPUs: gpus / 1000, GPUModel: model}
		}
		if len(tiles) == MaxTiles {
			omitted += run.Count
			continue
		}
		alloc := allocatable[run.Shape]
		t := Tile{
			Count: run.Count, GPUs: gpus / 1000, GPUModel: model,
			CPU:     MilliAmounts{Free: cpu, Allocatable: inventory.MilliOf(alloc[corev1.ResourceCPU])},
			Memory:  MilliAmounts{Free: mem, Allocatable: inventory.MilliOf(alloc[corev1.ResourceMemory])},
			Tainted: len(run.Taints) > 0,
		}
		if gpuRes != "" {
			q := alloc[gpuRes]
			t.GPUsAllocatable = q.Value()
		}
		tiles = append(tiles, t)
	}
	if largest != nil {
		// Formatted once, for the best node only.
		largest.CPU = getcmd.Amount(corev1.ResourceCPU, milli(best[1]))
		largest.Memory = getcmd.Amount(corev1.ResourceMemory, milli(best[2]))
		largest.Text = blockText(largest)
	}
	return largest, tiles, omitted
}

// gpusOn is the GPU resource of a run's nodes with their model and the milli-GPUs free on each.
func gpusOn(run *inventory.NodeRun) (corev1.ResourceName, string, int64) {
	for _, g := range inventory.GPUs {
		if _, ok := run.Labels[g.ModelLabel]; ok || run.Free(g.Resource) > 0 {
			return g.Resource, run.Labels[g.ModelLabel], run.Free(g.Resource)
		}
	}
	return "", "", 0
}

func milli(v int64) resource.Quantity { return *resource.NewMilliQuantity(v, resource.DecimalSI) }

// blockText says it as "4× A100 + 12 cpu + 64Gi on one node".
func blockText(b *Block) string {
	var parts []string
	if b.GPUs > 0 {
		parts = append(parts, fmt.Sprintf("%d× %s", b.GPUs, cmp.Or(b.GPUModel, "GPU")))
	}
	parts = append(parts, b.CPU+" cpu", b.Memory)
	return strings.Join(parts, " + ") + " on one node"
}

func (s *Server) serveFleet(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, limit, err := page(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	fit, err := parseFit(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	snap, err := s.snapshots.get(r.Context(), clustersView)
	if err != nil {
		writeHubError(w, r, err)
		return
	}
	sums := s.summaries(snap)
	writeJSON(w, http.StatusOK, s.fleetPage(snap, sums, q.Get("name"), fit, q.Get("only") == "fits", offset, limit))
}

// fleetPage filters the summaries by name and, with a request, answers it for each cluster
// (only those it fits, with onlyFits), then cuts one page.
func (s *Server) fleetPage(snap *snapshot, sums *summaries, name string, fit *fitRequest, onlyFits bool, offset, limit int) *Fleet {
	out := &Fleet{ReadAt: snap.readAt, Hub: s.opts.Hub, Clusters: len(sums.items), Offset: offset, Limit: limit, Totals: sums.totals, Models: sums.models}
	out.Items = []ClusterSummary{}
	if fit != nil {
		out.Fit = &FitAnswer{Request: fit.text}
	}
	for i := range sums.items {
		item := &sums.items[i]
		if name != "" && !strings.Contains(item.Name, name) {
			continue
		}
		var answer *ClusterFit
		if fit != nil {
			answer = fit.answer(sums.views[i], item)
			if answer.Fits {
				out.Fit.Fits++
			}
			if onlyFits && !answer.Fits {
				continue
			}
		}
		if out.Matching >= offset && len(out.Items) < limit {
			c := *item
			c.Fit = answer
			out.Items = append(out.Items, c)
		}
		out.Matching++
	}
	return out
}
