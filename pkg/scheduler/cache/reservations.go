package cache

// Reservations: capacity promised by decisions and not yet seen used, per cluster, and the
// epoch that tells a cycle whether what it saw is still what the cache holds.

import (
	"time"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Reserve replaces the placement's reservations on a cluster with rs (all for that placement).
// Expired reservations of any placement are dropped at the same time.
func (c *Cache) Reserve(cluster, placementKey string, rs []framework.Reservation, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := make([]framework.Reservation, 0, len(c.reservations[cluster])+len(rs))
	for _, r := range c.reservations[cluster] {
		if r.Placement != placementKey && r.Active(now) {
			kept = append(kept, r)
		}
	}
	kept = append(kept, rs...)
	c.setReservations(cluster, kept)
	c.clusterInputChanged(cluster)
}

// ReservationEpoch changes whenever any reservation is added or dropped, and whenever a
// placement's decisions are assumed (Assume). A cycle computed from a
// snapshot taken at one epoch saw exactly the reservations of every later snapshot of the same
// epoch, so what it decides may be reserved without computing it again.
func (c *Cache) ReservationEpoch() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reservationEpoch
}

// SnapshotAt returns the current snapshot and the reservation epoch it reflects.
func (c *Cache) SnapshotAt() (*framework.Snapshot, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked(), c.reservationEpoch
}

// Unreserve drops the placement's reservations on a cluster.
func (c *Cache) Unreserve(cluster, placementKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rs := c.reservations[cluster]
	kept := make([]framework.Reservation, 0, len(rs))
	for _, r := range rs {
		if r.Placement != placementKey {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(rs) {
		return
	}
	c.setReservations(cluster, kept)
	c.clusterInputChanged(cluster)
}

// setReservations stores a new slice (never modifying one a snapshot may hold).
func (c *Cache) setReservations(cluster string, rs []framework.Reservation) {
	c.reservationEpoch++
	if len(rs) == 0 {
		delete(c.reservations, cluster)
		return
	}
	c.reservations[cluster] = rs
}
