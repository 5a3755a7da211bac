package framework

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// Reservation is capacity a placement's decision promised on a cluster that the cluster's
// inventory does not show consumed yet. HardwareFit subtracts it for every other placement,
// so that a burst of placements cannot all count the same free nodes.
type Reservation struct {
	// Placement is the key ("namespace/name") of the placement that holds it.
	Placement string
	// Request and Replicas are what to subtract: Replicas pods of Request.
	Request  *inventory.Request
	Replicas int64
	// Amounts is the total the reservation stands for (requests × replicas, and replicas
	// machines of a machine type's pseudo resource), and Base the cluster's requested totals
	// (milli, see RequestedTotals) when it was made: once the inventory's requested totals have
	// grown by Amounts, the pods are running and the reservation is dropped.
	Amounts corev1.ResourceList
	Base    map[corev1.ResourceName]int64
	// Until is when the reservation lapses even if the inventory never shows the pods.
	Until time.Time
}

// Active reports whether the reservation still counts at now.
func (r *Reservation) Active(now time.Time) bool { return now.Before(r.Until) }

// Seen reports whether the cluster's requested totals (RequestedTotals of its current
// inventory) show the reserved amounts consumed.
func (r *Reservation) Seen(requested map[corev1.ResourceName]int64) bool {
	for name, q := range r.Amounts {
		if requested[name]-r.Base[name] < inventory.MilliOf(q) {
			return false
		}
	}
	return true
}

// RequestedTotals returns the cluster's requested totals in milli-units by resource, and the
// machines in use per machine type under its pseudo resource (inventory.MachinesInUse): a guest
// takes over a reservation pod of its own size, so only that count shows it started.
func RequestedTotals(inv *fleetfitv1alpha1.ClusterInventory) map[corev1.ResourceName]int64 {
	out := map[corev1.ResourceName]int64{}
	if inv == nil {
		return out
	}
	for _, r := range inv.Status.Resources {
		out[r.Name] = inventory.MilliOf(r.Requested)
	}
	inventory.MachinesInUse(&inv.Status, out)
	inventory.DevicesInUse(&inv.Status, out)
	return out
}
