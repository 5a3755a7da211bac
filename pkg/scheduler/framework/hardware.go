package framework

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// HardwareFitName is the name of the HardwareFit plugin, which filters and scores with
// HPAIntents. It is here, not in the plugin's package, because the placement controller
// reads that filter's result for the intents' status and must not depend on a plugin.
const HardwareFitName = "HardwareFit"

// NoInventory is the reason a cluster without a ClusterInventory, and without the
// fleetfit-agent add-on, cannot host hardware requirements: no agent reports for it. A
// simulation over fleet files words it for files.
const NoInventory = "no fleetfit agent on this cluster (no ClusterInventory): enable the fleetfit-agent add-on there, or install the agent, to schedule hardware requirements there"

// KeepsDecided reports whether the placement's decided clusters get the relaxed check of
// FitsHardware. They do when every intent has shaped the placement's decisions before
// (status.scheduledPlacement names it): then its pods may run there. An intent that never
// did — just created, moved from another placement, or seen by the hub after its Placement —
// did not choose those clusters, and its requirements are checked on them in full.
func (r *Request) KeepsDecided() bool {
	for _, in := range r.Intents {
		if in.Status.ScheduledPlacement != r.Placement.Name {
			return false
		}
	}
	return true
}

// FitsHardware reports whether the replicas of every pod fit on the cluster's nodes, and why
// not. A pod (hpa.Pod) is the consumers of one workload object, the containers of one pod
// template: each replica needs one node with all their amounts and features at once. For a
// cluster the placement does not decide (decided false) that is the full check: a fresh
// inventory, every label the pods require reported, and all replicas placed together after
// the active reservations of other placements (placementKey names the placement being
// scheduled, whose own reservations are not subtracted); a machine pod's replicas take free
// machines of its type instead of room on nodes. For a decided one it is the relaxed check of
// stillFits.
func (c *ClusterInfo) FitsHardware(pods []*hpa.Pod, placementKey string, decided bool, now time.Time) (bool, string) {
	if decided {
		return c.stillFits(pods, true)
	}
	return c.fits(pods, placementKey, now, true)
}

// HardwareFits is FitsHardware without the reason: the verdict is the same, and it costs far
// less where a cluster does not fit, since finding out why looks at every node again and
// words amounts. Filters over the fleet use it, and ask for reasons only of the clusters
// explain shows.
func (c *ClusterInfo) HardwareFits(pods []*hpa.Pod, placementKey string, decided bool, now time.Time) bool {
	return c.HardwareFit(pods, placementKey, decided, now) != FitNever
}

// Fit is a cluster's answer for the pods of a placement.
type Fit uint8

const (
	// FitNever: the pods do not fit, not even once the cluster's pools add the nodes they may.
	FitNever Fit = iota
	// FitNow: the pods fit on the nodes there are (or the cluster is decided and keeps them).
	FitNow
	// FitAfterScaleUp: the pods fit once the cluster's autoscaling pools add nodes, within
	// their limits, and every pod that needs them may wait for a scale-up (hpa.Pod.ScaleUp).
	FitAfterScaleUp
)

// HardwareFit is HardwareFits with the three answers.
func (c *ClusterInfo) HardwareFit(pods []*hpa.Pod, placementKey string, decided bool, now time.Time) Fit {
	if decided {
		if ok, _ := c.stillFits(pods, false); ok {
			return FitNow
		}
		return FitNever
	}
	fit, _, _ := c.fitsScaling(pods, placementKey, now, false)
	return fit
}

// ScaleUpNeeded says what the pods need the cluster's pools to add ("fits after scale-up: 1
// node of g6.12xlarge from NodePool gpu (limit: 3 more)"), or "" when they fit now or never.
func (c *ClusterInfo) ScaleUpNeeded(pods []*hpa.Pod, placementKey string, decided bool, now time.Time) string {
	if decided {
		return ""
	}
	fit, _, launches := c.fitsScaling(pods, placementKey, now, false)
	if fit != FitAfterScaleUp {
		return ""
	}
	return ScaleUpText(launches)
}

// ScaleUpText words the nodes a scale-up adds.
func ScaleUpText(launches []inventory.Launch) string {
	parts := make([]string, len(launches))
	for i, l := range launches {
		parts[i] = l.String()
	}
	return "fits after scale-up: " + strings.Join(parts, ", ")
}

// allocations holds Allocations for fits to reuse: the scratch buffers of a fresh Allocation
// per cluster were most of what a filter over a large fleet allocated. Nothing fits returns
// refers to an Allocation, so Reset may reuse its memory.
var allocations = sync.Pool{New: func() any { return new(inventory.Allocation) }}

// fits is the full check; the reason is worded only when why is true.
func (c *ClusterInfo) fits(pods []*hpa.Pod, placementKey string, now time.Time, why bool) (bool, string) {
	fit, reason, _ := c.fitsScaling(pods, placementKey, now, why)
	return fit != FitNever, reason
}

// fitsScaling is the full check with its three answers; it returns the nodes the pools would
// add for FitAfterScaleUp. Replicas go to the nodes there are first; only what they cannot
// take goes to new nodes, and only for pods that may wait for a scale-up. Reservations of
// other placements take new nodes too when the nodes there are cannot hold them: they were
// decided with a scale-up, and a burst must not promise one new node twice.
func (c *ClusterInfo) fitsScaling(pods []*hpa.Pod, placementKey string, now time.Time, why bool) (Fit, string, []inventory.Launch) {
	if c.View == nil || !c.InventoryFresh(now) {
		if !why {
			return FitNever, "", nil
		}
		_, reason := c.fresh(now)
		return FitNever, reason, nil
	}
	for _, pod := range pods {
		if pod.Replicas <= 0 {
			continue
		}
		if key, unknown := c.View.Unreported(pod.Request.Selector()); unknown {
			if !why {
				return FitNever, "", nil
			}
			return FitNever, c.unreported(pod, key), nil
		}
	}
	alloc := allocations.Get().(*inventory.Allocation)
	defer allocations.Put(alloc)
	alloc.Reset(c.View)
	c.placeReservations(alloc, placementKey, now)
	var reserved []inventory.Launch
	if c.View.CanScaleUp() {
		reserved = alloc.Launches()
	}
	scaled := false
	for _, pod := range pods {
		if pod.Replicas <= 0 {
			continue
		}
		// A split pod needs its smallest share here; the others all their replicas.
		replicas := int64(pod.PerCluster())
		var placed int64
		if pod.ScaleUp {
			var more bool
			placed, more = alloc.PlaceScalingUp(pod.Request, replicas)
			scaled = scaled || more
		} else {
			placed = alloc.Place(pod.Request, replicas)
		}
		if placed >= replicas {
			continue
		}
		if !why {
			return FitNever, "", nil
		}
		short := c.shortage(pod, placed, replicas)
		if pod.ScaleUp && c.View.CanScaleUp() {
			short += "; no NodePool of the cluster can add the nodes it needs within its limits"
		}
		return FitNever, short, nil
	}
	if !scaled {
		return FitNow, "", nil
	}
	if own := ownLaunches(alloc.Launches(), reserved); len(own) > 0 {
		return FitAfterScaleUp, "", own
	}
	return FitNow, "", nil
}

// placeReservations places on alloc the active reservations of other placements than
// placementKey. They take new nodes of the cluster's pools when the nodes there are cannot hold
// them: they were decided with a scale-up, and a burst must not promise one new node twice.
func (c *ClusterInfo) placeReservations(alloc *inventory.Allocation, placementKey string, now time.Time) {
	for k := range c.Reservations {
		if r := &c.Reservations[k]; r.Placement != placementKey && r.Active(now) {
			alloc.PlaceScalingUp(r.Request, r.Replicas)
		}
	}
}

// ownLaunches is what the pods added beyond the nodes reservations had added (before).
func ownLaunches(after, before []inventory.Launch) []inventory.Launch {
	var out []inventory.Launch
	for _, l := range after {
		for _, b := range before {
			if b.Pool == l.Pool && b.Shape == l.Shape {
				l.More -= b.Nodes
				l.Nodes -= b.Nodes
			}
		}
		if l.Nodes > 0 {
			out = append(out, l)
		}
	}
	return out
}

// shortage is why placed of a pod's replicas fit, fewer than wanted.
func (c *ClusterInfo) shortage(pod *hpa.Pod, placed, replicas int64) string {
	{
		if m, ok := pod.Request.MachineType(); ok {
			return c.machineShortage(pod, m, placed, replicas)
		}
		if ok, why := c.View.FitsOnOneNode(pod.Request); !ok {
			return pod.What + ": " + why
		}
		if placed == 0 {
			return pod.What + ": no node has room left for a replica once other consumers and in-flight placements are counted"
		}
		if pod.Split != nil {
			return fmt.Sprintf("%s: only %d replicas fit on the cluster's nodes, fewer than the smallest share of %d (split.minReplicas)", pod.What, placed, replicas)
		}
		return fmt.Sprintf("%s: only %d of %d replicas fit on the cluster's nodes", pod.What, placed, replicas)
	}
}

// machineShortage is why a machine pod's replicas did not all get a free machine: left is
// how many of the type's free machines were left for it (Place took them all), after the other
// consumers and the in-flight reservations of other placements.
func (c *ClusterInfo) machineShortage(pod *hpa.Pod, m inventory.MachineType, left, wanted int64) string {
	free, why := c.View.FreeMachines(pod.Request)
	switch {
	case why != "":
		return pod.What + ": " + why
	case free > left:
		return fmt.Sprintf("%s: %s/%s: %d free, %d wanted (%d reported free, %d of them taken by other consumers and in-flight placements)",
			pod.What, m.Group, m.Name, left, wanted, free, free-left)
	}
	return pod.What + ": " + inventory.MachineShortage(m, left, wanted)
}

// stillFits is the check for a cluster the placement already decides: its own pods may already
// run there and take the room they need, so only the nodes' features are checked again, from
// the last report however old (a consumer whose required features no schedulable node has any
// more loses the cluster). A machine consumer's guests hold the machines they took, so it keeps
// the cluster while the cluster reports its group and type (and a node with its features). A feature on a label the cluster does not report is unknown there,
// not missing, so it keeps the cluster, as silence does: the agent is told which keys to
// report and answers within one report.
func (c *ClusterInfo) stillFits(pods []*hpa.Pod, why bool) (bool, string) {
	if c.View == nil {
		if !why {
			return false, ""
		}
		return false, c.noInventory()
	}
	for _, pod := range pods {
		if _, unknown := c.View.Unreported(pod.Request.Selector()); unknown {
			continue
		}
		if _, ok := pod.Request.MachineType(); ok {
			if ok, reason := c.View.OffersMachineType(pod.Request); !ok {
				return false, pod.What + ": " + reason
			}
			continue
		}
		if !c.View.HasNode(pod.Request.Selector()) {
			if !why {
				return false, ""
			}
			_, reason := c.View.FitsOnOneNode(pod.Request)
			return false, pod.What + ": " + reason
		}
	}
	return true, ""
}

// unreported is why a cluster is not chosen for a consumer that requires a label its agent
// does not report (yet: the hub asks every agent for the keys intents use).
func (c *ClusterInfo) unreported(pod *hpa.Pod, key string) string {
	why := fmt.Sprintf("%s: cluster %s does not report label %s yet", pod.What, c.Name(), key)
	if c.Inventory != nil && c.Inventory.Status.ReportedLabels == nil {
		// Its agent will not answer the hub's request: it predates it.
		why += " (its fleetfit agent does not say which labels it reports, so only the default prefixes count: upgrade the agent)"
	}
	return why
}

func (c *ClusterInfo) fresh(now time.Time) (bool, string) {
	if c.View == nil {
		return false, c.noInventory()
	}
	if !c.InventoryFresh(now) {
		age, _ := c.InventoryAge(now)
		return false, fmt.Sprintf("the ClusterInventory is %s old (more than %s): not chosen anew until the fleetfit agent reports again (is it running, and can it reach the hub?)%s",
			age.Round(time.Second), c.StaleAfter, c.staleAddOn())
	}
	return true, ""
}

// SplitCapacity is how many replicas of a split pod the cluster can take now, up to limit:
// what fits on its nodes, replica by replica as kube-scheduler would bind them, after the
// active reservations of other placements (placementKey names the placement being
// scheduled). The same per-node packing as fits, so that a share never promises room that
// the filter would not. A cluster without a fresh inventory holds none.
func (c *ClusterInfo) SplitCapacity(pod *hpa.Pod, placementKey string, now time.Time, limit int64) int64 {
	if c.View == nil || !c.InventoryFresh(now) || limit <= 0 {
		return 0
	}
	if _, unknown := c.View.Unreported(pod.Request.Selector()); unknown {
		return 0
	}
	alloc := allocations.Get().(*inventory.Allocation)
	defer allocations.Put(alloc)
	alloc.Reset(c.View)
	c.placeReservations(alloc, placementKey, now)
	return alloc.Place(pod.Request, limit)
}

// ReservedBy reports whether the placement holds an active reservation on the cluster: its
// newest pods there are promised, not yet seen running.
func (c *ClusterInfo) ReservedBy(placementKey string, now time.Time) bool {
	for k := range c.Reservations {
		if r := &c.Reservations[k]; r.Placement == placementKey && r.Active(now) {
			return true
		}
	}
	return false
}
