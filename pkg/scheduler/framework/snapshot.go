package framework

import (
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	clustersdkv1beta2 "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// ClusterInfo is what the scheduler knows about one managed cluster. It is immutable once
// built: when the cluster, its scores or its inventory change, a new ClusterInfo replaces it,
// so snapshots in use by other cycles are never touched. It shares the informer's objects and
// never copies them.
type ClusterInfo struct {
	Cluster *clusterv1.ManagedCluster
	// Claims are the cluster's ClusterClaims as a label set, for claim selectors and claim
	// topology keys.
	Claims labels.Set
	// Scores are the AddOnPlacementScores in the cluster's namespace, by name.
	Scores map[string]*clusterv1alpha1.AddOnPlacementScore
	// Inventory is the agent's report, nil when the cluster has no fleetfit agent.
	Inventory *fleetfitv1alpha1.ClusterInventory
	// View answers per-node fit queries over Inventory; nil when Inventory is nil.
	View *inventory.View
	// Reservations are the capacity decisions promised on the cluster that its inventory does
	// not show yet; use the active ones only (Reservation.Active).
	Reservations []Reservation
	// StaleAfter is how old Inventory may be and still describe the cluster (see
	// InventoryFresh); NewClusterInfo sets InventoryStaleAfter.
	StaleAfter time.Duration
	// NoInventoryReason, when set, is why a cluster without Inventory or agent add-on is not
	// chosen, in place of NoInventory: a fleet read from files lacks files, not an agent.
	NoInventoryReason string
}

// NewClusterInfo builds the info for a cluster.
func NewClusterInfo(c *clusterv1.ManagedCluster, scores map[string]*clusterv1alpha1.AddOnPlacementScore, inv *fleetfitv1alpha1.ClusterInventory) *ClusterInfo {
	info := &ClusterInfo{Cluster: c, Scores: scores, Inventory: inv, StaleAfter: InventoryStaleAfter}
	if len(c.Status.ClusterClaims) > 0 {
		info.Claims = make(labels.Set, len(c.Status.ClusterClaims))
		for _, cl := range c.Status.ClusterClaims {
			info.Claims[cl.Name] = cl.Value
		}
	}
	if inv != nil {
		info.View = inventory.NewView(&inv.Status)
	}
	return info
}

// Name returns the cluster's name.
func (c *ClusterInfo) Name() string { return c.Cluster.Name }

// Labels returns the cluster's labels as a label set.
func (c *ClusterInfo) Labels() labels.Set { return labels.Set(c.Cluster.Labels) }

// Terminating reports whether the cluster is being deleted; such clusters are never selected.
func (c *ClusterInfo) Terminating() bool { return !c.Cluster.DeletionTimestamp.IsZero() }

// InventoryStaleAfter is, by default, how old a ClusterInventory may be, relative to a cycle's
// time, and still describe the cluster: an older one means the agent has not reported for a
// while (it stopped, its credentials expired, or the hub's API server was out of reach).
//
// Silence is not absence: a stale inventory only keeps the cluster from being chosen anew. A
// cluster a placement already decides keeps its decision whatever the age of its inventory;
// only the cluster's own fate (deleted, unavailable, tainted) removes it, as in OCM.
const InventoryStaleAfter = fleetfitv1alpha1.DefaultInventoryStaleAfter

// InventoryFresh reports whether the cluster has an inventory observed at most StaleAfter
// before now.
func (c *ClusterInfo) InventoryFresh(now time.Time) bool {
	age, ok := c.InventoryAge(now)
	return ok && age <= c.StaleAfter
}

// InventoryStale reports whether the cluster has an inventory that is older than StaleAfter
// at now (a cluster without inventory is not stale: it has no agent).
func (c *ClusterInfo) InventoryStale(now time.Time) bool {
	age, ok := c.InventoryAge(now)
	return ok && age > c.StaleAfter
}

// InventoryAge returns how long ago the agent observed the cluster, or false without inventory.
func (c *ClusterInfo) InventoryAge(now time.Time) (time.Duration, bool) {
	if c.Inventory == nil || c.Inventory.Status.ObservedAt.IsZero() {
		return 0, false
	}
	return now.Sub(c.Inventory.Status.ObservedAt.Time), true
}

// Snapshot is an immutable, indexed view of the fleet that one or more scheduling cycles read
// concurrently. Clusters are indexed in name order, so iterating a Bitset visits clusters by
// name, and results never depend on map order.
type Snapshot struct {
	clusters []*ClusterInfo
	*fleetIndex
	// terminating and tainted are the clusters being deleted and those with taints.
	terminating, tainted *Bitset

	decisionCount []int32
	decided       map[string][]string

	intents IntentCompiler
}

// fleetIndex is what a snapshot derives from the clusters' names and labels and from the
// cluster sets and bindings. Snapshots that differ only in decisions, or in clusters' other
// inputs (status, scores, inventory, reservations), share it (see Update).
type fleetIndex struct {
	index map[string]int

	sets     map[string]*Bitset
	setObjs  map[string]*clusterv1beta2.ManagedClusterSet
	bindings map[string][]string

	labelIdx labelIndex
}

// SnapshotInput is everything a snapshot is built from. Decided maps a placement key
// ("namespace/name") to the clusters its PlacementDecisions currently hold.
type SnapshotInput struct {
	Clusters []*ClusterInfo
	Sets     []*clusterv1beta2.ManagedClusterSet
	// Bindings maps a namespace to the names of the ManagedClusterSetBindings in it.
	Bindings map[string][]string
	Decided  map[string][]string
	// Intents gives the compiled form of HPAIntents (see Snapshot.Intent); nil compiles
	// each intent whenever it is asked for.
	Intents IntentCompiler
}

// NewSnapshot indexes the input. Cluster-set membership is evaluated once here, so cycles
// only combine bitsets. It does not copy the clusters.
func NewSnapshot(in SnapshotInput) *Snapshot {
	s := &Snapshot{
		clusters: slices.Clone(in.Clusters),
		fleetIndex: &fleetIndex{
			index:    make(map[string]int, len(in.Clusters)),
			sets:     make(map[string]*Bitset, len(in.Sets)),
			setObjs:  make(map[string]*clusterv1beta2.ManagedClusterSet, len(in.Sets)),
			bindings: in.Bindings,
		},
		decided: in.Decided,
		intents: in.Intents,
	}
	less := func(a, b *ClusterInfo) int { return strings.Compare(a.Name(), b.Name()) }
	if !slices.IsSortedFunc(s.clusters, less) {
		slices.SortFunc(s.clusters, less)
	}
	n := len(s.clusters)
	s.terminating, s.tainted = NewBitset(n), NewBitset(n)
	for i, c := range s.clusters {
		s.index[c.Name()] = i
		s.markCluster(i, c)
	}
	for _, set := range in.Sets {
		s.setObjs[set.Name] = set
		members := NewBitset(n)
		matches := setSelector(set)
		for i, c := range s.clusters {
			if matches(c) {
				members.Set(i)
			}
		}
		s.sets[set.Name] = members
	}
	s.decisionCount = make([]int32, n)
	for _, names := range in.Decided {
		s.countDecided(names, 1)
	}
	return s
}

// SnapshotUpdate is what changed since a snapshot, for Update.
type SnapshotUpdate struct {
	// Clusters replace the infos of clusters of the same name whose labels are unchanged.
	Clusters []*ClusterInfo
	// Decided holds the clusters now in the decisions of each placement whose decisions
	// changed; nil means the placement has no decisions any more.
	Decided map[string][]string
}

// Update returns a snapshot of the same fleet with u applied, as NewSnapshot would build it
// from the updated input, without evaluating cluster-set membership again: the new snapshot
// shares the fleet's index with s, and s is unchanged. An info for a cluster s does not hold
// is ignored; the caller rebuilds with NewSnapshot when clusters come, go or change labels.
func (s *Snapshot) Update(u SnapshotUpdate) *Snapshot {
	next := *s
	if len(u.Clusters) > 0 {
		next.clusters = slices.Clone(s.clusters)
		next.terminating, next.tainted = s.terminating.Clone(), s.tainted.Clone()
		for _, info := range u.Clusters {
			if i, ok := s.index[info.Name()]; ok {
				next.clusters[i] = info
				next.markCluster(i, info)
			}
		}
	}
	if len(u.Decided) > 0 {
		next.decided = maps.Clone(s.decided)
		if next.decided == nil {
			next.decided = make(map[string][]string, len(u.Decided))
		}
		next.decisionCount = slices.Clone(s.decisionCount)
		for key, names := range u.Decided {
			next.countDecided(s.decided[key], -1)
			next.countDecided(names, 1)
			if names == nil {
				delete(next.decided, key)
			} else {
				next.decided[key] = names
			}
		}
	}
	return &next
}

// markCluster records in the snapshot's bitsets whether the cluster at index i is terminating
// and whether it has taints.
func (s *Snapshot) markCluster(i int, c *ClusterInfo) {
	s.terminating.Clear(i)
	if c.Terminating() {
		s.terminating.Set(i)
	}
	s.tainted.Clear(i)
	if len(c.Cluster.Spec.Taints) > 0 {
		s.tainted.Set(i)
	}
}

func (s *Snapshot) countDecided(names []string, delta int32) {
	for _, name := range names {
		if i, ok := s.index[name]; ok {
			s.decisionCount[i] += delta
		}
	}
}

// setSelector returns the membership test of a ManagedClusterSet, with OCM's own semantics
// (the exclusive set label by default, or a label selector); an invalid set selects nothing.
func setSelector(set *clusterv1beta2.ManagedClusterSet) func(*ClusterInfo) bool {
	sel, err := clustersdkv1beta2.BuildClusterSelector(set)
	if err != nil || sel == nil {
		return func(*ClusterInfo) bool { return false }
	}
	return func(c *ClusterInfo) bool { return sel.Matches(c.Labels()) }
}

// NumClusters returns the number of clusters; indexes run from 0 to NumClusters()-1.
func (s *Snapshot) NumClusters() int { return len(s.clusters) }

// Cluster returns the cluster at index i.
func (s *Snapshot) Cluster(i int) *ClusterInfo { return s.clusters[i] }

// Index returns the index of the named cluster.
func (s *Snapshot) Index(name string) (int, bool) {
	i, ok := s.index[name]
	return i, ok
}

// Terminating returns the clusters being deleted. The bitset is the snapshot's: read it, do
// not change it.
func (s *Snapshot) Terminating() *Bitset { return s.terminating }

// Tainted returns the clusters with at least one taint. The bitset is the snapshot's: read
// it, do not change it.
func (s *Snapshot) Tainted() *Bitset { return s.tainted }

// ClusterSet returns the members of a set and whether the set exists.
func (s *Snapshot) ClusterSet(name string) (*Bitset, bool) {
	b, ok := s.sets[name]
	return b, ok
}

// BindingNames returns the ManagedClusterSetBindings in a namespace, sorted.
func (s *Snapshot) BindingNames(namespace string) []string { return s.bindings[namespace] }

// SetExists reports whether a ManagedClusterSet exists.
func (s *Snapshot) SetExists(name string) bool {
	_, ok := s.setObjs[name]
	return ok
}

// DecisionCount returns how many placements currently decide the cluster at index i.
func (s *Snapshot) DecisionCount(i int) int32 { return s.decisionCount[i] }

// DecidedNames returns the clusters currently in a placement's decisions.
func (s *Snapshot) DecidedNames(placementKey string) []string { return s.decided[placementKey] }

// BitsetOf returns the indexes of the named clusters that exist in the snapshot.
func (s *Snapshot) BitsetOf(names []string) *Bitset {
	b := NewBitset(len(s.clusters))
	for _, n := range names {
		if i, ok := s.index[n]; ok {
			b.Set(i)
		}
	}
	return b
}
