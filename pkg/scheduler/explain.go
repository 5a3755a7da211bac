package scheduler

import (
	"fmt"
	"time"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Explanation is the explain output for one placement: OCM's debugger fields (the filter
// pipeline and prioritizer results, with OCM's JSON names) plus a verdict per cluster.
type Explanation struct {
	Placement string `json:"placement"`
	// FilterResults keeps OCM's misspelt JSON name so OCM's debugger clients can read it.
	FilterResults     []FilterResult      `json:"filteredPiplieResults,omitempty"`
	PrioritizeResults []PrioritizerResult `json:"prioritizeResults,omitempty"`
	Clusters          []ClusterVerdict    `json:"clusters"`
	Decisions         []Decision          `json:"decisions"`
	Unscheduled       int                 `json:"unscheduled,omitempty"`
	// Splits are the divisions of the placement's split intents.
	Splits  []SplitExplanation `json:"splits,omitempty"`
	Error   string             `json:"error,omitempty"`
	Warning string             `json:"warning,omitempty"`
}

// SplitExplanation is how one intent's replicas were divided: per cluster looked at, how many
// replicas it could hold and its share.
type SplitExplanation struct {
	Intent   string            `json:"intent"`
	Replicas int32             `json:"replicas"`
	Unplaced int32             `json:"unplaced,omitempty"`
	Clusters []ClusterShareWhy `json:"clusters"`
}

// ClusterShareWhy is one cluster of a division.
type ClusterShareWhy struct {
	Name string `json:"name"`
	// Capacity is how many replicas its nodes could hold for the intent (its running share
	// included), -1 when it was not counted because the clusters before it held the
	// replicas; Share is what it got.
	Capacity int32 `json:"capacity"`
	Share    int32 `json:"share"`
}

// ClusterVerdict says what happened to one available cluster.
type ClusterVerdict struct {
	Name string `json:"name"`
	// RejectedBy is the first filter that rejected the cluster, with its reason.
	RejectedBy string           `json:"rejectedBy,omitempty"`
	Reason     string           `json:"reason,omitempty"`
	Scores     map[string]int64 `json:"scores,omitempty"`
	Total      *int64           `json:"total,omitempty"`
	Selected   bool             `json:"selected"`
	// Note says what deserves attention about the cluster although it was not rejected for
	// it, such as an inventory too old for new decisions that the placement's current
	// decision keeps.
	Note string `json:"note,omitempty"`
	// Stale is set when the cluster's inventory is too old for new decisions.
	Stale bool `json:"stale,omitempty"`
}

// Explain turns a result computed with Options.Explain into an explanation. Clusters are
// listed in name order.
func Explain(key string, r *Result) *Explanation {
	r.Materialize()
	e := &Explanation{Placement: key, FilterResults: r.Filters, PrioritizeResults: r.Prioritizers, Decisions: r.Decisions(), Unscheduled: r.Unscheduled}
	switch {
	case r.Failed():
		e.Error = r.Status.String()
	case r.Status.Code() == framework.Warning:
		e.Warning = r.Status.String()
	}
	for _, d := range r.Divisions {
		se := SplitExplanation{Intent: d.Intent, Replicas: d.Total, Unplaced: d.Unplaced}
		for k, i := range d.Clusters {
			se.Clusters = append(se.Clusters, ClusterShareWhy{Name: r.snap.Cluster(i).Name(), Capacity: d.Capacity[k], Share: d.Shares[k]})
		}
		e.Splits = append(e.Splits, se)
	}
	if r.Available == nil {
		return e
	}
	rejected := map[string]Rejection{}
	rejectedBy := map[string]string{}
	for _, f := range r.Filters {
		for _, rej := range f.Rejected {
			if _, seen := rejected[rej.Cluster]; !seen {
				rejected[rej.Cluster] = rej
				rejectedBy[rej.Cluster] = f.Plugin
			}
		}
	}
	selected := map[string]bool{}
	for _, d := range e.Decisions {
		selected[d.ClusterName] = true
	}
	r.Available.ForEach(func(i int) {
		name := r.snap.Cluster(i).Name()
		v := ClusterVerdict{Name: name, Selected: selected[name]}
		if info := r.snap.Cluster(i); info.InventoryStale(r.now) {
			age, _ := info.InventoryAge(r.now)
			v.Stale = true
			v.Note = fmt.Sprintf("ClusterInventory is %s old (stale after %s): no new decisions onto this cluster until its agent reports again; existing ones are kept",
				age.Round(time.Second), info.StaleAfter)
		}
		if note := r.Notes[name]; note != "" {
			if v.Note != "" {
				v.Note += "; "
			}
			v.Note += note
		}
		if rej, ok := rejected[name]; ok {
			v.RejectedBy, v.Reason = rejectedBy[name], rej.Reason
		} else if total, ok := r.Total(name); ok {
			v.Total = &total
			v.Scores = map[string]int64{}
			for _, p := range r.Prioritizers {
				v.Scores[p.Name] = p.Scores[name]
			}
		}
		e.Clusters = append(e.Clusters, v)
	})
	return e
}
