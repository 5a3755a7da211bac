// Package framework defines how fleetfit's placement scheduler is extended: plugins with one
// interface per extension point (PreFilter, Filter, Score, RequeueAfter), a Status that tells an expected
// rejection from a misconfiguration and from an internal error, per-cycle state, and the
// immutable, indexed Snapshot of the fleet that a cycle reads.
//
// A cycle filters the clusters that the Placement's cluster sets make available: every filter
// receives the same candidates and returns the subset it accepts (so filters may run
// concurrently), and the feasible clusters are the intersection. Each prioritizer then scores
// the feasible clusters in [MinClusterScore, MaxClusterScore]; the weighted sum orders them.
//
// Adding a plugin is one package under pkg/scheduler/plugins plus one line in the registry
// (pkg/scheduler/plugins/registry.go).
package framework

import (
	"context"
	"fmt"
	"time"

	"k8s.io/utils/clock"
	clusterlisterv1alpha1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

const (
	// MaxClusterScore is the highest score a prioritizer gives.
	MaxClusterScore int64 = 100
	// MinClusterScore is the lowest score a prioritizer gives.
	MinClusterScore int64 = -100
)

// Plugin is the base of every plugin.
type Plugin interface {
	Name() string
}

// Request is what one cycle schedules: a Placement and the HPAIntents that refer to it.
type Request struct {
	Placement *clusterv1beta1.Placement
	// Intents are the valid HPAIntents whose placementRef names the Placement, by name.
	Intents []*fleetfitv1alpha1.HPAIntent
	// Decided holds the clusters in the Placement's current decisions; never nil.
	Decided *Bitset
	// Pinned holds the decided clusters that the cycle keeps while they stay feasible, ahead
	// of any other cluster whatever the scores (the placement controller's hold-still rule);
	// nil pins none, and the cycle ranks every feasible cluster as OCM's does.
	Pinned *Bitset
	// Sticky gives the decided clusters a head start in the ranking (see StickyMargin), so
	// that a placement that follows its scores moves only to a cluster that scores clearly
	// better, never back and forth between clusters whose scores are close.
	Sticky bool
	// Now is the cycle's time; plugins use it instead of a clock so a cycle is consistent.
	Now time.Time
}

// StickyMargin is, per unit of weight of the placement's most weighted prioritizer, how much
// more than a decided cluster another must score in all to take its place in a Sticky cycle:
// a tenth of that prioritizer's range (-100..100).
const StickyMargin = 20

// Key returns "namespace/name" of the placement.
func (r *Request) Key() string { return r.Placement.Namespace + "/" + r.Placement.Name }

// Rejections records why a filter rejected clusters. It is nil unless the cycle is explained,
// so filters should build reason strings only through Rejectf.
type Rejections interface {
	Reject(cluster int, reason string)
}

// Rejectf records a formatted reason when r is non-nil.
func Rejectf(r Rejections, cluster int, format string, args ...any) {
	if r != nil {
		r.Reject(cluster, fmt.Sprintf(format, args...))
	}
}

// PreFilterPlugin prepares, once per cycle and before any filter runs, what its Filter and
// Score read back from the CycleState, so that neither computes it again. Only filters in the
// profile have their PreFilter run; a prioritizer must cope with a state it did not prepare.
type PreFilterPlugin interface {
	Plugin
	// PreFilter writes the plugin's per-cycle data into state. A Misconfigured or Error
	// status stops the cycle before any filter runs.
	PreFilter(ctx context.Context, state *CycleState, snap *Snapshot, req *Request) *Status
}

// FilterPlugin narrows the clusters a placement may use.
type FilterPlugin interface {
	Plugin
	// Filter returns the members of candidates that the request may use. It must not modify
	// candidates (other filters read it concurrently). A Misconfigured or Error status stops
	// the cycle; rejected clusters are not failures and are reported through rejections.
	Filter(ctx context.Context, state *CycleState, snap *Snapshot, req *Request, candidates *Bitset, rejections Rejections) (*Bitset, *Status)
}

// ReasonPlugin is a filter whose reasons cost far more than its verdicts, such as a per-node
// fit that must look at every node again to say what is missing. The scheduler passes its
// Filter no Rejections and, once every filter has run, asks Reason only for the clusters that
// explain shows: those this filter rejected and no filter before it did, as many as the cycle
// records.
type ReasonPlugin interface {
	FilterPlugin
	// Reason says why Filter rejected the cluster at index i, in the same cycle state.
	Reason(state *CycleState, snap *Snapshot, req *Request, i int) string
}

// NotePlugin is a filter with something to say about a cluster it passed, such as the nodes
// the cluster must add first. The scheduler asks it only when it explains a cycle.
type NotePlugin interface {
	FilterPlugin
	// Note says what deserves attention about the feasible cluster at index i, or "".
	Note(state *CycleState, snap *Snapshot, req *Request, i int) string
}

// ScorePlugin ranks feasible clusters.
type ScorePlugin interface {
	Plugin
	// Score writes a score in [MinClusterScore, MaxClusterScore] into scores[i] for each
	// member i of feasible; scores has one entry per snapshot cluster and starts at zero.
	Score(ctx context.Context, state *CycleState, snap *Snapshot, req *Request, feasible *Bitset, scores []int64) *Status
}

// RequeuePlugin asks for the placement to be scheduled again at a known time, for example
// when a toleration expires.
type RequeuePlugin interface {
	Plugin
	// RequeueAfter returns how long until the result of the cycle may change by itself, or 0.
	RequeueAfter(ctx context.Context, state *CycleState, snap *Snapshot, req *Request) time.Duration
}

// Handle gives plugins what lives outside the snapshot.
type Handle interface {
	Clock() clock.PassiveClock
	// ScoreLister reads AddOnPlacementScores for the CEL scores() function.
	ScoreLister() clusterlisterv1alpha1.AddOnPlacementScoreLister
}

// Args are the arguments a prioritizer is created with, taken from the Placement's
// ScoreCoordinate. Param is the part of a builtIn name after the first ':' (for
// "ResourceAllocatable:nvidia.com/gpu" it is "nvidia.com/gpu"); AddOn is set for AddOn
// coordinates.
type Args struct {
	Param string
	AddOn *clusterv1beta1.AddOnScore
}

// Factory creates a plugin. Filters are created once with empty Args; prioritizers are created
// per distinct ScoreCoordinate, and a factory refuses Args it cannot use with an error that
// becomes the placement's Misconfigured message.
type Factory func(h Handle, args Args) (Plugin, error)

// Registry maps plugin names to factories.
type Registry map[string]Factory
