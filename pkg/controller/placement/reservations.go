package placement

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// maxPersistedReservations bounds status.reservations of one intent (the CRD allows 1000): a
// placement newly deciding more clusters than that at once persists the first ones by name,
// and the others are held in memory only.
const maxPersistedReservations = 500

// Reservations live in two places. The cache holds them for the cycles of this process, from
// the moment a cycle decides (Reserve). Each intent's status.reservations holds them for the
// next process: a restarted hub or a new leader reads them back (RestoreReservations) before
// its first cycle, so the capacity promised by the last decisions before the restart stays
// taken until the inventories show the pods. The status is written before the decisions, so a
// decision never exists without its reservation being readable; a reservation whose cluster
// the placement does not decide (the process died between the two writes) is ignored.

// persistedReservations returns the reservations an intent's status should hold after a cycle
// of its placement that moved the decisions from before to after at now: the ones it held
// that still count (the cluster is still decided, the reservation has not lapsed, and the
// inventory does not show the pods), and one for each cluster newly decided. An intent that
// asks for no amounts holds none.
func persistedReservations(in *fleetfitv1alpha1.HPAIntent, snap *framework.Snapshot, before []string, after []scheduler.Decision,
	now time.Time, timeout time.Duration) []fleetfitv1alpha1.ClusterReservation {
	compiled, err := snap.Intent(in)
	if err != nil {
		return nil
	}
	amounts := compiled.Amounts()
	if len(amounts) == 0 {
		return nil
	}
	decided := sets.New[string]()
	for _, d := range after {
		decided.Insert(d.ClusterName)
	}
	var out []fleetfitv1alpha1.ClusterReservation
	held := sets.New[string]()
	for _, r := range in.Status.Reservations {
		if !decided.Has(r.ClusterName) || !now.Before(r.Since.Add(timeout)) || held.Has(r.ClusterName) {
			continue
		}
		if seen(snap, r, amountsOn(compiled, &in.Status, r.ClusterName)) {
			continue
		}
		held.Insert(r.ClusterName)
		out = append(out, r)
	}
	added := decided.Difference(sets.New(before...)).Difference(held)
	for _, name := range sets.List(added) {
		r := fleetfitv1alpha1.ClusterReservation{ClusterName: name, Since: metav1.NewTime(now)}
		if i, ok := snap.Index(name); ok && snap.Cluster(i).Inventory != nil {
			inv := snap.Cluster(i).Inventory
			for _, res := range inv.Status.Resources {
				if _, ok := amounts[res.Name]; ok {
					r.RequestedBefore = setRequested(r.RequestedBefore, res.Name, res.Requested)
				}
			}
			// Machines in use too, so that a reservation of machines is seen after a
			// restart as well (see framework.RequestedTotals).
			inUse := map[corev1.ResourceName]int64{}
			inventory.MachinesInUse(&inv.Status, inUse)
			inventory.DevicesInUse(&inv.Status, inUse)
			for name, milli := range inUse {
				if _, ok := amounts[name]; ok {
					r.RequestedBefore = setRequested(r.RequestedBefore, name, *resource.NewMilliQuantity(milli, resource.DecimalSI))
				}
			}
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b fleetfitv1alpha1.ClusterReservation) int {
		return strings.Compare(a.ClusterName, b.ClusterName)
	})
	if len(out) > maxPersistedReservations {
		out = out[:maxPersistedReservations]
	}
	return out
}

func setRequested(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) corev1.ResourceList {
	if list == nil {
		list = corev1.ResourceList{}
	}
	list[name] = q
	return list
}

// amountsOn is what the intent's pods request in all on the cluster: a split pod its share
// there (from status), the others all their replicas.
func amountsOn(compiled *hpa.Intent, status *fleetfitv1alpha1.HPAIntentStatus, cluster string) corev1.ResourceList {
	if compiled.SplitOf() == nil {
		return compiled.Amounts()
	}
	out := corev1.ResourceList{}
	for k := range compiled.Pods {
		pod := &compiled.Pods[k]
		for name, q := range pod.AmountsOf(pod.ReplicasOn(status, cluster)) {
			sum := out[name]
			sum.Add(q)
			out[name] = sum
		}
	}
	return out
}

// seen reports whether the cluster's current inventory shows the reserved amounts consumed.
func seen(snap *framework.Snapshot, r fleetfitv1alpha1.ClusterReservation, amounts corev1.ResourceList) bool {
	i, ok := snap.Index(r.ClusterName)
	if !ok {
		return false
	}
	res := reservationOf(r, amounts, 0)
	return res.Seen(framework.RequestedTotals(snap.Cluster(i).Inventory))
}

// reservationOf is the cache's form of a persisted reservation (Request and Replicas are set
// by the caller).
func reservationOf(r fleetfitv1alpha1.ClusterReservation, amounts corev1.ResourceList, timeout time.Duration) framework.Reservation {
	base := make(map[corev1.ResourceName]int64, len(r.RequestedBefore))
	for name, q := range r.RequestedBefore {
		base[name] = inventory.MilliOf(q)
	}
	return framework.Reservation{Amounts: amounts, Base: base, Until: r.Since.Add(timeout)}
}

// restoreReservations puts back in the cache the reservations that the intents' status holds
// and that still count at now (see RestoreReservations). It runs once the caches are synced,
// before the first cycle. It returns how many it restored.
func (c *Controller) restoreReservations(logger klog.Logger, now time.Time) int {
	intents, err := c.intents.List(labels.Everything())
	if err != nil {
		return 0
	}
	n := RestoreReservations(c.cache, intents, now, c.reservationTimeout())
	if n > 0 {
		logger.Info("Restored in-flight reservations from HPAIntent status", "count", n)
	}
	return n
}

// RestoreReservations puts into c the reservations that the intents' status holds and that
// still count at now: their placement still decides the cluster, they have not lapsed (held
// for timeout from their start), and the cluster's inventory does not show the pods. The hub
// does it after a restart; whoever reads a live hub's objects into a cache of its own (the
// candidates query of the CLI) does it to see the capacity the hub's in-flight decisions hold.
// It returns how many (cluster, placement) reservations it restored.
func RestoreReservations(c *cache.Cache, intents []*fleetfitv1alpha1.HPAIntent, now time.Time, timeout time.Duration) int {
	snap := c.Snapshot()
	type slot struct{ cluster, placement string }
	held := map[slot][]framework.Reservation{}
	var order []slot
	for _, in := range intents {
		if len(in.Status.Reservations) == 0 || !in.DeletionTimestamp.IsZero() {
			continue
		}
		placement := in.Status.ScheduledPlacement
		if placement == "" {
			placement = in.Spec.PlacementRef.Name
		}
		key := in.Namespace + "/" + placement
		decided := sets.New(snap.DecidedNames(key)...)
		compiled, err := snap.Intent(in)
		if err != nil {
			continue
		}
		for _, r := range in.Status.Reservations {
			if !decided.Has(r.ClusterName) || !now.Before(r.Since.Add(timeout)) || seen(snap, r, amountsOn(compiled, &in.Status, r.ClusterName)) {
				continue
			}
			s := slot{r.ClusterName, key}
			if _, ok := held[s]; !ok {
				order = append(order, s)
			}
			for k := range compiled.Pods {
				pod := &compiled.Pods[k]
				replicas := pod.ReplicasOn(&in.Status, r.ClusterName)
				if replicas <= 0 {
					continue
				}
				res := reservationOf(r, pod.AmountsOf(replicas), timeout)
				res.Placement, res.Request, res.Replicas = key, pod.Request, int64(replicas)
				held[s] = append(held[s], res)
			}
		}
	}
	for _, s := range order {
		c.Reserve(s.cluster, s.placement, held[s], now)
	}
	return len(order)
}

// DefaultReservationTimeout is how long fleetfit-hub holds capacity promised to a new
// decision when the cluster's inventory never shows the pods (the workload was not delivered,
// or failed).
const DefaultReservationTimeout = 5 * time.Minute

func (c *Controller) reservationTimeout() time.Duration {
	if c.opts.ReservationTimeout > 0 {
		return c.opts.ReservationTimeout
	}
	return DefaultReservationTimeout
}
