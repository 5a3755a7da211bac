package placement

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// What a cluster reports (its ClusterInventory, its AddOnPlacementScores, the reservations
// held on it) requeues a placement only when one of the plugins the placement runs says the
// change can change its result (framework.EnqueueExtensions). The placements asked are the
// ones a report can concern at all: those that decide the cluster, and those whose interest
// says they look beyond their decided clusters — they wait for clusters, or follow their
// scores (see interest). Every other placement is left alone without being looked at, so a
// report costs the hub the placements it can change, not the number of placements.

// interest is what makes a placement care about clusters it does not decide.
type interest struct {
	// waiting: it wants clusters it does not have (unscheduled decisions, or every feasible
	// cluster because it sets no numberOfClusters).
	waiting bool
	// follows: its decided clusters may move for scores alone (scheduler.Follows).
	follows bool
}

// interests holds the interest of every placement that has one, by key. It is kept from the
// Placement's informer events (its spec and its status, which says how many clusters it has).
type interests struct {
	mu sync.RWMutex
	m  map[string]interest
}

func (s *interests) set(key string, in interest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !in.waiting && !in.follows {
		delete(s.m, key)
		return
	}
	if s.m == nil {
		s.m = map[string]interest{}
	}
	s.m[key] = in
}

func (s *interests) get(key string) interest {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.m[key]
}

// inNamespaces returns the keys of the placements with an interest in the namespaces.
func (s *interests) inNamespaces(namespaces sets.Set[string]) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for key := range s.m {
		ns, _, _ := strings.Cut(key, "/")
		if namespaces.Has(ns) {
			out = append(out, key)
		}
	}
	return out
}

// interestOf computes a placement's interest from its spec, its intents and the status this
// controller wrote last. A placement none of whose plugins reads reports has none: what
// clusters report changes nothing it would do beyond the clusters it decides. Nor does one
// that selects every feasible cluster follow scores: scores choose nothing for it.
func (c *Controller) interestOf(p *clusterv1beta1.Placement) interest {
	req := &framework.Request{Placement: p, Intents: c.intentsFor(p)}
	if !c.scheduler.Watches(req) {
		return interest{}
	}
	waiting := p.Spec.NumberOfClusters == nil || p.Status.NumberOfSelectedClusters < *p.Spec.NumberOfClusters
	if splits, placed := splitsPlaced(req.Intents); splits {
		// A split placement decides as few clusters as hold its replicas: it waits only while
		// some of them have no room.
		waiting = !placed
	}
	return interest{waiting: waiting, follows: p.Spec.NumberOfClusters != nil && c.scheduler.Follows(p)}
}

// splitsPlaced reports whether every intent splits its replicas (spec.split), and then
// whether every one has placed them all.
func splitsPlaced(intents []*fleetfitv1alpha1.HPAIntent) (splits, placed bool) {
	if len(intents) == 0 {
		return false, false
	}
	placed = true
	for _, in := range intents {
		if in.Spec.Split == nil {
			return false, false
		}
		placed = placed && in.Status.Split != nil && in.Status.Split.Unplaced == 0 && len(in.Status.Split.Shares) > 0
	}
	return true, placed
}

// trackInterest records a placement's interest (or forgets it, for a deleted one).
func (c *Controller) trackInterest(p *clusterv1beta1.Placement, deleted bool) {
	key := p.Namespace + "/" + p.Name
	if deleted || !c.Handles(p) {
		c.interests.set(key, interest{})
		return
	}
	c.interests.set(key, c.interestOf(p))
}

// clusterChanged requeues the placements whose result ev, a change of what the cluster
// reports, can change. source names the kind of object that changed, for the metric.
func (c *Controller) clusterChanged(ev framework.ClusterEvent, source string) {
	if !c.started.Load() || ev.New == nil {
		return
	}
	cluster := ev.Name()
	deciding := c.cache.DecidedBy(cluster)
	candidates := deciding.Clone()
	// Placements that look beyond their decided clusters, in the namespaces that can use
	// this one; whether their cluster sets allow it is checked below.
	memberOf := c.setsOf(cluster)
	namespaces := c.boundNamespaces(memberOf)
	for _, key := range c.interests.inNamespaces(namespaces) {
		candidates.Insert(key)
	}
	queued, skipped := 0, 0
	for _, key := range sets.List(candidates) {
		decides, in := deciding.Has(key), c.interests.get(key)
		if !decides && !in.follows && !ev.MayAdmitMore() {
			// A placement that only waits for clusters can only be admitted by this one, and
			// nothing fits there now that did not before (a heartbeat, less room): none of
			// its plugins needs asking.
			skipped++
			continue
		}
		ns, name, _ := strings.Cut(key, "/")
		p, err := c.placements.Placements(ns).Get(name)
		if err != nil || !c.Handles(p) || !p.DeletionTimestamp.IsZero() {
			continue
		}
		if !decides && (!namespaces.Has(ns) || len(p.Spec.ClusterSets) > 0 && !memberOf.HasAny(p.Spec.ClusterSets...)) {
			continue
		}
		t := &framework.Target{
			Request: &framework.Request{Placement: p, Intents: c.withWrittenScheduledPlacement(c.intentsFor(p)),
				Decided: framework.NewBitset(0), Now: ev.Now},
			Decides: decides, Waiting: in.waiting, Follows: in.follows, Intents: c.cache,
		}
		if c.scheduler.ClusterChanged(ev, t) {
			queued++
			c.enqueue(p)
		} else {
			skipped++
		}
	}
	c.opts.Metrics.observeClusterEvent(source, queued, skipped)
}

// setsOf returns the names of the cluster sets the cluster belongs to.
func (c *Controller) setsOf(cluster string) sets.Set[string] {
	memberOf := sets.New[string]()
	cl, ok := c.cache.Cluster(cluster)
	if !ok {
		return memberOf
	}
	all, _ := c.sets.List(labels.Everything())
	for _, s := range all {
		if inSet(s, cl) {
			memberOf.Insert(s.Name)
		}
	}
	return memberOf
}

// boundNamespaces returns the namespaces with a binding to one of the sets.
func (c *Controller) boundNamespaces(setNames sets.Set[string]) sets.Set[string] {
	namespaces := sets.New[string]()
	if setNames.Len() == 0 {
		return namespaces
	}
	bindings, _ := c.bindings.List(labels.Everything())
	for _, b := range bindings {
		if setNames.Has(b.Name) {
			namespaces.Insert(b.Namespace)
		}
	}
	return namespaces
}

// byPlacementRef indexes HPAIntents by "namespace/placement" for the Placement each names and
// the one it last shaped (status.scheduledPlacement): a cycle, and a cluster event's check of
// a placement, read its intents without going through every intent of the namespace.
const byPlacementRef = "byPlacementRef"

// addIntentIndex adds byPlacementRef to the HPAIntent informer, unless another user of the
// shared informer already did.
func addIntentIndex(informer toolscache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[byPlacementRef]; ok {
		return nil
	}
	return informer.AddIndexers(toolscache.Indexers{byPlacementRef: func(obj any) ([]string, error) {
		in, ok := obj.(*fleetfitv1alpha1.HPAIntent)
		if !ok {
			return nil, nil
		}
		var keys []string
		for _, name := range hpa.PlacementsOf(in) {
			keys = append(keys, in.Namespace+"/"+name)
		}
		return keys, nil
	}})
}

// intentsFor returns the intents that shape p, following what each intent last shaped (see
// hpa.IntentsOf).
func (c *Controller) intentsFor(p *clusterv1beta1.Placement) []*fleetfitv1alpha1.HPAIntent {
	objs, err := c.intentIndex.ByIndex(byPlacementRef, p.Namespace+"/"+p.Name)
	if err != nil {
		return nil
	}
	all := make([]*fleetfitv1alpha1.HPAIntent, 0, len(objs))
	for _, obj := range objs {
		if in, ok := obj.(*fleetfitv1alpha1.HPAIntent); ok {
			all = append(all, in)
		}
	}
	return hpa.IntentsOf(p.Namespace, p.Name, all, true)
}

// released tells the placements that wait for room that the clusters a cycle took away from a
// placement with intents may have room again: its reservations there are gone (Reserve
// dropped them). The old info is the one the cycle read.
func (c *Controller) released(plan *Plan, before []string, intents int) {
	if intents == 0 {
		return
	}
	kept := sets.New[string]()
	for _, d := range plan.Result.Decisions() {
		kept.Insert(d.ClusterName)
	}
	snap, now := plan.Result.Snapshot(), c.opts.Clock.Now()
	for _, name := range before {
		if kept.Has(name) {
			continue
		}
		if i, ok := snap.Index(name); ok {
			c.clusterChanged(framework.NewClusterEvent(snap.Cluster(i), c.cache.ClusterInfo(name), now), "Reservation")
		}
	}
}

// expiryRound is how often the controller looks for reservations that lapsed: reservations
// made together lapse a few at a time, and one look per round serves all of them.
const expiryRound = 30 * time.Second

// watchLapses runs until ctx ends. Once per expiryRound it tells the placements that wait for
// room about each cluster where a reservation lapsed during the round (a lapsed reservation
// gives room back without any report), as a cluster event: only the placements that the room
// now admits on that cluster are scheduled again, as when a report frees room, rather than
// every waiting placement running a cycle over the fleet.
func (c *Controller) watchLapses(ctx context.Context) {
	last := c.opts.Clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Clock.After(expiryRound):
		}
		now := c.opts.Clock.Now()
		if c.started.Load() {
			for _, ev := range lapsedEvents(c.cache.Snapshot(), last, now) {
				c.clusterChanged(ev, "ReservationLapsed")
			}
		}
		last = now
	}
}

// lapsedEvents returns, for each cluster of the snapshot where a reservation lapsed after since
// and by now, the event of that lapse: the cluster's info as it was, with those reservations
// still active, and as it is.
func lapsedEvents(snap *framework.Snapshot, since, now time.Time) []framework.ClusterEvent {
	var out []framework.ClusterEvent
	for i := range snap.NumClusters() {
		info := snap.Cluster(i)
		var old *framework.ClusterInfo
		for k := range info.Reservations {
			r := &info.Reservations[k]
			if !r.Until.After(since) || r.Until.After(now) {
				continue
			}
			if old == nil {
				cp := *info
				cp.Reservations = slices.Clone(info.Reservations)
				old = &cp
			}
			old.Reservations[k].Until = now.Add(expiryRound)
		}
		if old != nil {
			out = append(out, framework.NewClusterEvent(old, info, now))
		}
	}
	return out
}
