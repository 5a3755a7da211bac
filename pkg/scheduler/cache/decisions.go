package cache

// The decisions index: the clusters each placement's PlacementDecisions hold, as the
// informer shows them or as a cycle assumed them, and which placements hold each cluster.

import (
	"maps"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

type decisionEntry struct {
	placementKey string
	clusters     []string
}

// decidedClusters returns the clusters in the decisions of the placement with this key,
// sorted, or nil when it has no decisions.
func (c *Cache) decidedClusters(key string) []string {
	if a, ok := c.assumed[key]; ok {
		return a
	}
	return c.informerDecided(key)
}

// informerDecided returns the clusters in the decisions of the placement as the informer
// shows them, sorted, or nil.
func (c *Cache) informerDecided(key string) []string {
	decisionNames, ok := c.byKey[key]
	if !ok {
		return nil
	}
	clusters, ok := c.decided[key]
	if !ok {
		seen := map[string]struct{}{}
		for d := range decisionNames {
			for _, cl := range c.decisions[d].clusters {
				seen[cl] = struct{}{}
			}
		}
		clusters = slices.Sorted(maps.Keys(seen))
		c.decided[key] = clusters
	}
	return clusters
}

// UpsertDecision records the clusters of a PlacementDecision, so that Balance counts come
// from the cache instead of listing every decision in every cycle.
func (c *Cache) UpsertDecision(d *clusterv1beta1.PlacementDecision) {
	placement := d.Labels[clusterv1beta1.PlacementLabel]
	if placement == "" {
		return
	}
	clusters := make([]string, 0, len(d.Status.Decisions))
	for _, cd := range d.Status.Decisions {
		if cd.ClusterName != "" {
			clusters = append(clusters, cd.ClusterName)
		}
	}
	sort.Strings(clusters)
	key := d.Namespace + "/" + placement
	id := d.Namespace + "/" + d.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.decisions[id]; ok {
		if old.placementKey == key && slices.Equal(old.clusters, clusters) {
			return
		}
		c.forgetDecision(id, old)
	}
	c.decisions[id] = decisionEntry{placementKey: key, clusters: clusters}
	if c.byKey[key] == nil {
		c.byKey[key] = map[string]struct{}{}
	}
	c.byKey[key][id] = struct{}{}
	for _, cl := range clusters {
		if c.clusterIndex[cl] == nil {
			c.clusterIndex[cl] = map[string]int{}
		}
		c.clusterIndex[cl][key]++
	}
	delete(c.decided, key)
	c.decidedChanged[key] = struct{}{}
	c.confirmAssumed(key)
}

// DeleteDecision forgets a PlacementDecision.
func (c *Cache) DeleteDecision(namespace, name string) {
	id := namespace + "/" + name
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.decisions[id]; ok {
		c.forgetDecision(id, old)
	}
}

func (c *Cache) forgetDecision(id string, old decisionEntry) {
	delete(c.decisions, id)
	for _, cl := range old.clusters {
		if c.clusterIndex[cl][old.placementKey]--; c.clusterIndex[cl][old.placementKey] <= 0 {
			delete(c.clusterIndex[cl], old.placementKey)
		}
		if len(c.clusterIndex[cl]) == 0 {
			delete(c.clusterIndex, cl)
		}
	}
	delete(c.byKey[old.placementKey], id)
	if len(c.byKey[old.placementKey]) == 0 {
		delete(c.byKey, old.placementKey)
	}
	delete(c.decided, old.placementKey)
	c.decidedChanged[old.placementKey] = struct{}{}
	c.confirmAssumed(old.placementKey)
}

// Assume records the clusters a cycle decided for a placement, before its PlacementDecisions
// are written: until the informer shows them, the next snapshots count them (Balance, the
// decided clusters of other cycles), as kube-scheduler assumes a pod on its node before the
// binding is written. Without it, placements scheduled together would all see the fleet
// without each other's new decisions and pile onto the same clusters. The assumption ends
// when the informer shows the placement deciding exactly these clusters, or with Forget. It
// reports whether it changed what snapshots count for the placement.
func (c *Cache) Assume(placementKey string, clusters []string) bool {
	sorted := slices.Sorted(slices.Values(clusters))
	c.mu.Lock()
	defer c.mu.Unlock()
	if slices.Equal(c.decidedClusters(placementKey), sorted) {
		if _, ok := c.assumed[placementKey]; ok && slices.Equal(c.informerDecided(placementKey), sorted) {
			delete(c.assumed, placementKey)
		}
		return false
	}
	c.assumed[placementKey] = sorted
	c.decidedChanged[placementKey] = struct{}{}
	// A cycle computed before this saw other decisions than the next will: it must not
	// reserve what it decided on that view (see ReservationEpoch).
	c.reservationEpoch++
	c.confirmAssumed(placementKey)
	return true
}

// Forget ends the assumption of a placement's decisions (their write failed, or the placement
// is gone): snapshots count what the informer shows.
func (c *Cache) Forget(placementKey string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.assumed[placementKey]; ok {
		delete(c.assumed, placementKey)
		c.decidedChanged[placementKey] = struct{}{}
	}
}

// confirmAssumed ends the assumption of a placement whose decisions, as the informer shows
// them, now hold what was assumed.
func (c *Cache) confirmAssumed(key string) {
	if a, ok := c.assumed[key]; ok && slices.Equal(a, c.informerDecided(key)) {
		delete(c.assumed, key)
	}
}

// DecidedBy returns the keys of the placements whose decisions hold the cluster.
func (c *Cache) DecidedBy(cluster string) sets.Set[string] {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := sets.New[string]()
	for key := range c.clusterIndex[cluster] {
		out.Insert(key)
	}
	return out
}
