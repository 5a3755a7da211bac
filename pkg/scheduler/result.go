package scheduler

import (
	"time"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Result is the outcome of one cycle.
type Result struct {
	snap    *framework.Snapshot
	explain bool
	// maxReasons bounds the rejections each filter records (Options.MaxReasons).
	maxReasons int
	// now is the cycle's time.
	now time.Time

	// Status is nil on success, a Warning when a plugin warned, and a failure when the cycle
	// stopped (then the selection is empty and must not replace existing decisions).
	Status *framework.Status

	// NumBindings is the number of valid ManagedClusterSetBindings in the namespace.
	NumBindings int
	// EligibleSets are the bound cluster sets the placement may use, sorted.
	EligibleSets []string
	// Available are the clusters of the eligible sets; Feasible those that passed every filter.
	Available *framework.Bitset
	Feasible  *framework.Bitset

	// Filters is the filter pipeline, OCM-style: entry k holds the clusters left after the
	// first k+1 filters, named by the joined filter names.
	Filters []FilterResult
	// Prioritizers holds each enabled prioritizer's weight and scores.
	Prioritizers []PrioritizerResult

	totals   []int64
	ordered  []int
	selected []int

	// Notes are what filters say about feasible clusters (NotePlugin), by cluster name; only
	// for a cycle that explains.
	Notes map[string]string

	// Divisions are the shares of the placement's split intents over the selected clusters.
	Divisions []framework.Division

	// Unscheduled is numberOfClusters minus the number selected, when numberOfClusters is set
	// (0 for a split placement whose divisions place every replica).
	Unscheduled int
	// RequeueAfter is when the result may change by itself (a toleration expires), or 0.
	RequeueAfter time.Duration
}

// FilterResult is one step of the filter pipeline.
type FilterResult struct {
	Name             string      `json:"name"`
	Plugin           string      `json:"plugin"`
	FilteredClusters []string    `json:"filteredClusters"`
	Rejected         []Rejection `json:"rejected,omitempty"`
	set              *framework.Bitset
}

// Rejection says why a filter rejected a cluster.
type Rejection struct {
	Cluster string `json:"cluster"`
	Reason  string `json:"reason"`
}

// PrioritizerResult is one prioritizer's weight and its scores of the feasible clusters.
type PrioritizerResult struct {
	Name   string           `json:"name"`
	Weight int32            `json:"weight"`
	Scores map[string]int64 `json:"scores"`
	scores []int64
}

// Decision is a selected cluster with its total score.
type Decision struct {
	ClusterName string
	Score       int64
}

func (r *Result) mergeStatus(st *framework.Status) {
	if st.Code() == framework.Warning && r.Status == nil {
		r.Status = st
	}
}

// Failed reports whether the cycle stopped on a misconfiguration or an error.
func (r *Result) Failed() bool { return r.Status.IsFailure() }

// Decisions returns the selected clusters in score order (highest first, then by name).
func (r *Result) Decisions() []Decision {
	out := make([]Decision, 0, len(r.selected))
	for _, i := range r.selected {
		out = append(out, Decision{ClusterName: r.snap.Cluster(i).Name(), Score: r.totals[i]})
	}
	return out
}

// NumFeasible returns the number of clusters that passed every filter.
func (r *Result) NumFeasible() int { return r.Feasible.Count() }

// NumAvailable returns the number of clusters in the eligible cluster sets.
func (r *Result) NumAvailable() int { return r.Available.Count() }

// Total returns the weighted score sum of a cluster, and false when it is not feasible.
func (r *Result) Total(name string) (int64, bool) {
	i, ok := r.snap.Index(name)
	if !ok || r.Feasible == nil || !r.Feasible.Has(i) || r.totals == nil {
		return 0, false
	}
	return r.totals[i], true
}

// Totals returns the weighted score sum of every feasible cluster by name.
func (r *Result) Totals() map[string]int64 {
	out := map[string]int64{}
	if r.Feasible == nil || r.totals == nil {
		return out
	}
	r.Feasible.ForEach(func(i int) { out[r.snap.Cluster(i).Name()] = r.totals[i] })
	return out
}

// Materialize fills the name lists of the filter pipeline and the score maps, for explain and
// for the debug endpoint. Scheduling itself never needs them.
func (r *Result) Materialize() {
	for k := range r.Filters {
		f := &r.Filters[k]
		f.FilteredClusters = []string{}
		f.set.ForEach(func(i int) { f.FilteredClusters = append(f.FilteredClusters, r.snap.Cluster(i).Name()) })
	}
	for k := range r.Prioritizers {
		p := &r.Prioritizers[k]
		p.Scores = map[string]int64{}
		r.Feasible.ForEach(func(i int) { p.Scores[r.snap.Cluster(i).Name()] = p.scores[i] })
	}
}

// Before returns the clusters that passed every filter that runs before the named one in the
// pipeline (the available clusters when it is the first), or nil when it did not run.
func (r *Result) Before(plugin string) *framework.Bitset {
	prev := r.Available
	for _, f := range r.Filters {
		if f.Plugin == plugin {
			return prev
		}
		prev = f.set
	}
	return nil
}

// After returns the clusters that passed every filter up to and including the named one, or
// nil when it did not run.
func (r *Result) After(plugin string) *framework.Bitset {
	for _, f := range r.Filters {
		if f.Plugin == plugin {
			return f.set
		}
	}
	return nil
}

// Snapshot returns the snapshot the cycle ran on.
func (r *Result) Snapshot() *framework.Snapshot { return r.snap }

// FeasibleCluster reports whether the named cluster passed every filter of the cycle.
func (r *Result) FeasibleCluster(name string) bool {
	if r.Feasible == nil || r.snap == nil {
		return false
	}
	i, ok := r.snap.Index(name)
	return ok && r.Feasible.Has(i)
}
