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
	Error             string              `json:"error,omitempty"`
	Warning           string              `json:"warning,omitempty"`
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
			v.Note = fmt.Sprintf("ClusterInventory is %s old (stale after %s): no new decisions onto this cluster until its agent reports again; existing ones are kept",
				age.Round(time.Second), info.StaleAfter)
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
