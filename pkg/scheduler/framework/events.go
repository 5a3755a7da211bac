package framework

import (
	"slices"
	"sync"
	"time"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
)

// Requeueing by cause. A placement is scheduled again only when something it reads changed in
// a way that can change its result, as kube-scheduler's queueing hints decide which pods an
// event moves back to the active queue. What a placement reads is what its plugins read, so
// each plugin whose answer depends on what clusters report says which changes matter to it
// (EnqueueExtensions); the placement controller asks the plugins of each placement that a
// change may concern and requeues it only when one of them says Queue. A change no plugin
// answers Queue to — a heartbeat, a new revision with the same content, a few millicores more
// or less on a cluster the placement neither decides nor waits for — costs no cycle.
//
// Plugins answer from what a cluster reports (its ClusterInfo before and after); the events
// of the placement itself (its spec, its intents) and of the cluster's membership (labels,
// sets, bindings, taints) requeue it as they always did.

// ClusterEvent is a change of one cluster's scheduling inputs that the cache applied: its info
// before and after. Old is nil when the cluster had no info (it was just added); New is never
// nil. Now is when the change was seen, for freshness.
type ClusterEvent struct {
	Old, New *ClusterInfo
	Now      time.Time

	// admits caches MayAdmitMore for the plugins of every placement the event is checked
	// against; nil computes it on each call.
	admits *admitsMemo
}

type admitsMemo struct {
	once sync.Once
	more bool
}

// NewClusterEvent returns the event of a cluster's info changing from old to new at now.
func NewClusterEvent(old, new *ClusterInfo, now time.Time) ClusterEvent {
	return ClusterEvent{Old: old, New: new, Now: now, admits: &admitsMemo{}}
}

// MayAdmitMore reports whether the cluster may host, after the change, some request it could
// not host before: it is new, its report became fresh, a reservation on it ended, or its
// report shows room or machines it did not (inventory.View.Gained). When it is false, no
// placement that waits for room can use the cluster now if it could not before, and hints
// need not check each one.
func (e ClusterEvent) MayAdmitMore() bool {
	if e.admits == nil {
		return e.mayAdmitMore()
	}
	e.admits.once.Do(func() { e.admits.more = e.mayAdmitMore() })
	return e.admits.more
}

func (e ClusterEvent) mayAdmitMore() bool {
	switch {
	case e.New == nil || e.New.View == nil:
		return false
	case e.Old == nil || e.Old.View == nil:
		return true
	case !e.Old.InventoryFresh(e.Now) && e.New.InventoryFresh(e.Now):
		return true
	}
	for k := range e.Old.Reservations {
		r := &e.Old.Reservations[k]
		if r.Active(e.Now) && !slices.ContainsFunc(e.New.Reservations, func(n Reservation) bool {
			return n.Placement == r.Placement && n.Request == r.Request && n.Active(e.Now)
		}) {
			return true
		}
	}
	return e.New.View.Gained(e.Old.View)
}

// Name returns the cluster's name.
func (e ClusterEvent) Name() string { return e.New.Name() }

// Target is a placement as a cluster event meets it.
type Target struct {
	*Request
	// Decides is set when the placement's decisions hold the event's cluster.
	Decides bool
	// Waiting is set when the placement wants clusters it does not have: its last cycle left
	// decisions unscheduled, or it selects every feasible cluster (no numberOfClusters), so
	// any cluster that becomes feasible changes its result.
	Waiting bool
	// Follows is set when the placement's decided clusters may move for scores alone (see
	// MoveRole): a change of a score on a cluster it does not decide may then matter.
	Follows bool
	// Intents compiles the request's intents (the hub's cache); nil compiles them anew.
	Intents IntentCompiler
}

// Intent returns the compiled form of one of the target's intents.
func (t *Target) Intent(in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error) {
	return CompiledIntent(t.Intents, in)
}

// QueueingHint is a plugin's answer to whether an event may change its result for a placement.
type QueueingHint int

const (
	// QueueSkip: the event cannot change what the plugin answers for the placement.
	QueueSkip QueueingHint = iota
	// Queue: it may; the placement is scheduled again.
	Queue
)

// String returns the hint's name, for logs and metrics.
func (h QueueingHint) String() string {
	if h == Queue {
		return "Queue"
	}
	return "QueueSkip"
}

// EnqueueExtensions is implemented by the plugins whose answer depends on what clusters report
// (their inventory, their resources). A plugin that does not implement it never requeues a
// placement for a cluster event: its inputs come from the placement, the cluster's identity
// or the decisions, whose own events requeue the placements they concern.
type EnqueueExtensions interface {
	Plugin
	// ClusterChanged returns Queue when ev can change what the plugin answers for the target
	// placement. It must be cheap (at most a fit check of the one cluster) and must not write.
	ClusterChanged(ev ClusterEvent, t *Target) QueueingHint
	// Watches reports whether the plugin reads what clusters report for this request at all.
	// A placement none of whose plugins does is checked only against the clusters it decides,
	// whatever it waits for.
	Watches(req *Request) bool
}

// MoveRole is what a prioritizer is to the rule that decides when a placement's decided
// clusters may move for scores alone (see the placement controller's hold-still rule): a
// placement whose reported-state prioritizers can outweigh its Steady prioritizer follows
// the changes they read (OCM's resource-based scheduling, story 3), at most once per its
// scoreRateLimit; any other placement keeps its decided clusters while they stay feasible
// (story 4).
type MoveRole int

const (
	// MoveNeutral prioritizers neither pin nor follow (Balance, the always-on ones).
	MoveNeutral MoveRole = iota
	// MoveHolds prioritizers favour the decided clusters (Steady).
	MoveHolds
	// MoveFollows prioritizers read what clusters report (free resources, add-on scores),
	// which a placement may weigh to follow its changes.
	MoveFollows
)

// MovePolicy is implemented by prioritizers that pin or follow (see MoveRole).
type MovePolicy interface {
	Plugin
	MoveRole() MoveRole
}
