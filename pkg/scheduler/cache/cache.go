// Package cache keeps the hub's view of the fleet up to date from informer events and hands
// out immutable snapshots to scheduling cycles. A snapshot is rebuilt only when something
// changed since the last one, and rebuilding shares every unchanged ClusterInfo: no cycle ever
// deep-copies the fleet.
//
// Beside the fleet it holds the compiled form of the stored HPAIntents (hpa.Intent), one per
// UID and generation, which its snapshots hand out (framework.Snapshot.Intent) and the
// controllers read through Intent: an intent is compiled once per generation, whoever reads
// it.
package cache

import (
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Cache is safe for concurrent use.
type Cache struct {
	mu sync.Mutex

	clusters    map[string]*clusterv1.ManagedCluster
	scores      map[string]map[string]*clusterv1alpha1.AddOnPlacementScore
	inventories map[string]*fleetfitv1alpha1.ClusterInventory
	// reservations hold, per cluster, capacity promised by decisions and not yet seen used.
	reservations map[string][]framework.Reservation
	infos        map[string]*framework.ClusterInfo // built lazily; deleted when stale
	sorted       []string                          // cluster names in order; nil when membership changed

	sets     map[string]*clusterv1beta2.ManagedClusterSet
	bindings map[string]map[string]struct{}

	decisions map[string]decisionEntry // "namespace/decisionName" -> entry
	decided   map[string][]string      // placement key -> clusters; nil entry = rebuild
	byKey     map[string]map[string]struct{}
	// clusterIndex counts, per cluster and placement key, the decision objects holding it.
	clusterIndex map[string]map[string]int
	// assumed holds, by placement key, the clusters a cycle decided whose PlacementDecisions
	// the informer does not show yet (see Assume); snapshots count them instead.
	assumed map[string][]string

	// reservationEpoch counts changes of reservations (see ReservationEpoch).
	reservationEpoch uint64
	// staleAfter is how old an inventory may be and still describe its cluster.
	staleAfter time.Duration
	// noInventory is why a cluster without an inventory is not chosen, when not the hub's.
	noInventory string

	// snap is the last snapshot, nil when the next must be built anew; infosChanged and
	// decidedChanged name the clusters and placements that changed since snap in ways that
	// Snapshot.Update applies to it.
	snap           *framework.Snapshot
	infosChanged   map[string]struct{}
	decidedChanged map[string]struct{}

	// intents are the compiled HPAIntents that snapshots hand to their readers.
	intents compiledIntents
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{
		clusters:     map[string]*clusterv1.ManagedCluster{},
		scores:       map[string]map[string]*clusterv1alpha1.AddOnPlacementScore{},
		inventories:  map[string]*fleetfitv1alpha1.ClusterInventory{},
		reservations: map[string][]framework.Reservation{},
		infos:        map[string]*framework.ClusterInfo{},
		sets:         map[string]*clusterv1beta2.ManagedClusterSet{},
		bindings:     map[string]map[string]struct{}{},
		decisions:    map[string]decisionEntry{},
		decided:      map[string][]string{},
		byKey:        map[string]map[string]struct{}{},
		clusterIndex: map[string]map[string]int{},
		assumed:      map[string][]string{},
		staleAfter:   framework.InventoryStaleAfter,
		intents:      compiledIntents{m: map[types.UID]*hpa.Intent{}},

		infosChanged:   map[string]struct{}{},
		decidedChanged: map[string]struct{}{},
	}
}

// SetInventoryStaleAfter sets how old a ClusterInventory may be and still describe its
// cluster (framework.InventoryStaleAfter by default); call it before the first snapshot.
func (c *Cache) SetInventoryStaleAfter(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 && d != c.staleAfter {
		c.staleAfter = d
		clear(c.infos)
		c.changed()
	}
}

// SetNoInventoryReason sets why a cluster without a ClusterInventory (and without the agent
// add-on) is not chosen, in place of framework.NoInventory: a fleet read from files words it
// for files. Call it before the first snapshot.
func (c *Cache) SetNoInventoryReason(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if reason != c.noInventory {
		c.noInventory = reason
		clear(c.infos)
		c.changed()
	}
}

// InventoryName reports whether a ClusterInventory is the one that describes a cluster: the
// one named like its cluster, in the cluster's namespace. Any other object of the kind is
// not the agent's and is ignored, so it can neither override nor, when deleted, remove the
// agent's report.
func InventoryName(inv *fleetfitv1alpha1.ClusterInventory) bool {
	return inv.Name == inv.Namespace
}

// changed makes the next snapshot a new one, built from scratch.
func (c *Cache) changed() { c.snap = nil }

// Snapshot returns the current snapshot, rebuilding it if anything changed.
func (c *Cache) Snapshot() *framework.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshotLocked()
}

func (c *Cache) snapshotLocked() *framework.Snapshot {
	if c.snap != nil {
		if len(c.infosChanged) == 0 && len(c.decidedChanged) == 0 {
			return c.snap
		}
		// Only some clusters' inputs other than their labels, or some placements' decisions,
		// changed: the last snapshot is updated, not rebuilt, so that a cycle after each
		// write costs no walk over the fleet.
		u := framework.SnapshotUpdate{Decided: make(map[string][]string, len(c.decidedChanged))}
		for name := range c.infosChanged {
			if _, ok := c.clusters[name]; ok {
				u.Clusters = append(u.Clusters, c.info(name))
			}
		}
		for key := range c.decidedChanged {
			u.Decided[key] = c.decidedClusters(key)
		}
		clear(c.infosChanged)
		clear(c.decidedChanged)
		c.snap = c.snap.Update(u)
		return c.snap
	}
	clear(c.infosChanged)
	clear(c.decidedChanged)
	if c.sorted == nil {
		c.sorted = slices.Sorted(maps.Keys(c.clusters))
	}
	in := framework.SnapshotInput{
		Clusters: make([]*framework.ClusterInfo, 0, len(c.sorted)),
		Sets:     make([]*clusterv1beta2.ManagedClusterSet, 0, len(c.sets)),
		Bindings: make(map[string][]string, len(c.bindings)),
		Decided:  make(map[string][]string, len(c.byKey)),
		Intents:  c,
	}
	for _, name := range c.sorted {
		in.Clusters = append(in.Clusters, c.info(name))
	}
	for _, name := range slices.Sorted(maps.Keys(c.sets)) {
		in.Sets = append(in.Sets, c.sets[name])
	}
	for ns, names := range c.bindings {
		in.Bindings[ns] = slices.Sorted(maps.Keys(names))
	}
	for key := range c.byKey {
		in.Decided[key] = c.decidedClusters(key)
	}
	for key := range c.assumed {
		in.Decided[key] = c.decidedClusters(key)
	}
	c.snap = framework.NewSnapshot(in)
	return c.snap
}

// info returns the info of a cached cluster, building it when its inputs changed.
func (c *Cache) info(name string) *framework.ClusterInfo {
	info := c.infos[name]
	if info == nil {
		info = framework.NewClusterInfo(c.clusters[name], c.scores[name], c.inventories[name])
		info.Reservations = c.reservations[name]
		info.StaleAfter = c.staleAfter
		info.NoInventoryReason = c.noInventory
		c.infos[name] = info
	}
	return info
}

// Cluster returns the cached cluster.
func (c *Cache) Cluster(name string) (*clusterv1.ManagedCluster, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.clusters[name]
	return cl, ok
}

// UpsertCluster records a cluster.
func (c *Cache) UpsertCluster(cl *clusterv1.ManagedCluster) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.clusters[cl.Name]
	if !ok {
		c.sorted = nil
	}
	c.clusters[cl.Name] = cl
	delete(c.infos, cl.Name)
	if ok && maps.Equal(old.Labels, cl.Labels) {
		// Its status changed (conditions, claims, resources): cluster-set membership, the
		// only thing a snapshot derives from clusters beyond their infos, stays.
		c.infosChanged[cl.Name] = struct{}{}
		return
	}
	c.changed()
}

// DeleteCluster forgets a cluster.
func (c *Cache) DeleteCluster(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.clusters[name]; !ok {
		return
	}
	delete(c.clusters, name)
	delete(c.infos, name)
	c.sorted = nil
	c.changed()
}

// UpsertScore records an AddOnPlacementScore (namespace = cluster name).
func (c *Cache) UpsertScore(s *clusterv1alpha1.AddOnPlacementScore) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Copy-on-write: snapshots in use hold the previous map through their ClusterInfo.
	next := maps.Clone(c.scores[s.Namespace])
	if next == nil {
		next = map[string]*clusterv1alpha1.AddOnPlacementScore{}
	}
	next[s.Name] = s
	c.scores[s.Namespace] = next
	c.clusterInputChanged(s.Namespace)
}

// DeleteScore forgets an AddOnPlacementScore.
func (c *Cache) DeleteScore(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.scores[namespace][name]; !ok {
		return
	}
	next := maps.Clone(c.scores[namespace])
	delete(next, name)
	c.scores[namespace] = next
	c.clusterInputChanged(namespace)
}

// UpsertInventory records a cluster's ClusterInventory (namespace = name = cluster name). It
// ignores any other ClusterInventory and returns false for it (see InventoryName).
func (c *Cache) UpsertInventory(inv *fleetfitv1alpha1.ClusterInventory) bool {
	if !InventoryName(inv) {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inventories[inv.Namespace] = inv
	// Reservations whose pods the new report shows are done. A report that shows none of them
	// leaves the reservations, and their epoch, as they are: a cycle under way need not be
	// computed again because a cluster heartbeat.
	if rs := c.reservations[inv.Namespace]; len(rs) > 0 {
		requested := framework.RequestedTotals(inv)
		kept := make([]framework.Reservation, 0, len(rs))
		for _, r := range rs {
			if !r.Seen(requested) {
				kept = append(kept, r)
			}
		}
		if len(kept) != len(rs) {
			c.setReservations(inv.Namespace, kept)
		}
	}
	c.clusterInputChanged(inv.Namespace)
	return true
}

// Inventory returns the cached ClusterInventory of a cluster.
func (c *Cache) Inventory(cluster string) *fleetfitv1alpha1.ClusterInventory {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inventories[cluster]
}

// DeleteInventory forgets a cluster's ClusterInventory; other ClusterInventories are ignored.
func (c *Cache) DeleteInventory(inv *fleetfitv1alpha1.ClusterInventory) {
	if !InventoryName(inv) {
		return
	}
	namespace := inv.Namespace
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inventories, namespace)
	c.clusterInputChanged(namespace)
}

func (c *Cache) clusterInputChanged(cluster string) {
	if _, ok := c.clusters[cluster]; ok {
		delete(c.infos, cluster)
		c.infosChanged[cluster] = struct{}{}
	}
}

// UpsertSet records a ManagedClusterSet.
func (c *Cache) UpsertSet(s *clusterv1beta2.ManagedClusterSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sets[s.Name] = s
	c.changed()
}

// DeleteSet forgets a ManagedClusterSet.
func (c *Cache) DeleteSet(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sets, name)
	c.changed()
}

// UpsertBinding records a ManagedClusterSetBinding.
func (c *Cache) UpsertBinding(b *clusterv1beta2.ManagedClusterSetBinding) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bindings[b.Namespace] == nil {
		c.bindings[b.Namespace] = map[string]struct{}{}
	}
	if _, ok := c.bindings[b.Namespace][b.Name]; ok {
		return
	}
	c.bindings[b.Namespace][b.Name] = struct{}{}
	c.changed()
}

// DeleteBinding forgets a ManagedClusterSetBinding.
func (c *Cache) DeleteBinding(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.bindings[namespace][name]; !ok {
		return
	}
	delete(c.bindings[namespace], name)
	if len(c.bindings[namespace]) == 0 {
		delete(c.bindings, namespace)
	}
	c.changed()
}

// Objects are hub objects that the cache follows.
type Objects struct {
	Clusters    []*clusterv1.ManagedCluster
	Sets        []*clusterv1beta2.ManagedClusterSet
	Bindings    []*clusterv1beta2.ManagedClusterSetBinding
	Scores      []*clusterv1alpha1.AddOnPlacementScore
	Inventories []*fleetfitv1alpha1.ClusterInventory
	Decisions   []*clusterv1beta1.PlacementDecision
}

// Load records objects as the informers' first list would: for a cache filled at once, as
// offline scheduling and tests do.
func (c *Cache) Load(o Objects) {
	for _, cl := range o.Clusters {
		c.UpsertCluster(cl)
	}
	for _, s := range o.Scores {
		c.UpsertScore(s)
	}
	for _, inv := range o.Inventories {
		c.UpsertInventory(inv)
	}
	for _, s := range o.Sets {
		c.UpsertSet(s)
	}
	for _, b := range o.Bindings {
		c.UpsertBinding(b)
	}
	for _, d := range o.Decisions {
		c.UpsertDecision(d)
	}
}

// ClusterInfo returns the current info of a cached cluster, building it when its inputs
// changed since it was last built, or nil for a cluster the cache does not hold. The info is
// the one the next snapshot holds: the controller compares it with the info after a change
// to tell which placements the change concerns.
func (c *Cache) ClusterInfo(name string) *framework.ClusterInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.clusters[name]; !ok {
		return nil
	}
	return c.info(name)
}
