package ui

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/getcmd"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// Placements is the answer of GET /api/placements: one page of the Placements, by namespace
// and name.
type Placements struct {
	ReadAt   time.Time          `json:"readAt"`
	Hub      string             `json:"hub"`
	Total    int                `json:"total"`
	Matching int                `json:"matching"`
	Offset   int                `json:"offset"`
	Limit    int                `json:"limit"`
	Items    []PlacementSummary `json:"items"`
}

// PlacementSummary is a Placement as `fleetfit get placements` shows it, with each decided
// cluster's score and each HPAIntent's delivery per cluster.
type PlacementSummary struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Selected is "1/3" or "4/all", as the SELECTED column.
	Selected  string           `json:"selected"`
	Satisfied string           `json:"satisfied"`
	Reason    string           `json:"reason"`
	Message   string           `json:"message,omitempty"`
	Decisions []DecidedCluster `json:"decisions"`
	Intents   []IntentSummary  `json:"intents"`
	Created   time.Time        `json:"created"`
}

// DecidedCluster is one cluster of the placement's PlacementDecisions.
type DecidedCluster struct {
	Cluster string `json:"cluster"`
	Score   int64  `json:"score"`
	Reason  string `json:"reason,omitempty"`
}

// IntentSummary is an HPAIntent that shapes the placement: its states as the HPAINTENTS
// column names them, and where its workload was delivered.
type IntentSummary struct {
	Name     string                             `json:"name"`
	States   []string                           `json:"states"`
	Message  string                             `json:"message,omitempty"`
	Delivery []fleetfitv1alpha1.ClusterDelivery `json:"delivery,omitempty"`
}

func (s *Server) servePlacements(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, limit, err := page(q)
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	snap, err := s.snapshots.get(r.Context(), placementsView)
	if err != nil {
		writeHubError(w, r, err)
		return
	}
	all := snap.derive(func(snap *snapshot) any { return summarizePlacements(snap.fleet) }).([]PlacementSummary)
	name := q.Get("name")
	out := &Placements{ReadAt: snap.readAt, Hub: s.opts.Hub, Total: len(all), Offset: offset, Limit: limit, Items: []PlacementSummary{}}
	for i := range all {
		p := &all[i]
		if name != "" && !strings.Contains(p.Namespace+"/"+p.Name, name) {
			continue
		}
		if out.Matching >= offset && len(out.Items) < limit {
			out.Items = append(out.Items, *p)
		}
		out.Matching++
	}
	writeJSON(w, http.StatusOK, out)
}

// summarizePlacements summarizes every placement of the fleet once per snapshot.
func summarizePlacements(f *simulate.Fleet) []PlacementSummary {
	decided := map[string][]DecidedCluster{}
	for _, d := range f.Decisions {
		p := d.Labels[clusterv1beta1.PlacementLabel]
		if p == "" {
			continue
		}
		key := d.Namespace + "/" + p
		for _, cd := range d.Status.Decisions {
			decided[key] = append(decided[key], DecidedCluster{Cluster: cd.ClusterName, Score: cd.Score, Reason: cd.Reason})
		}
	}
	placements := slices.Clone(f.Placements)
	slices.SortFunc(placements, func(a, b *clusterv1beta1.Placement) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	out := make([]PlacementSummary, 0, len(placements))
	for _, p := range placements {
		decisions := decided[p.Namespace+"/"+p.Name]
		slices.SortFunc(decisions, func(a, b DecidedCluster) int { return cmp.Compare(a.Cluster, b.Cluster) })
		satisfied, reason, message := getcmd.Satisfied(p)
		sum := PlacementSummary{
			Namespace: p.Namespace, Name: p.Name, Selected: getcmd.Selected(p, len(decisions)),
			Satisfied: satisfied, Reason: reason, Message: message,
			Decisions: nonNil(decisions), Intents: []IntentSummary{}, Created: p.CreationTimestamp.Time,
		}
		// The intents the hub's placement controller reads for it, as get placements lists them.
		for _, in := range hpa.IntentsOf(p.Namespace, p.Name, f.Intents, true) {
			is := IntentSummary{Name: in.Name, States: nonNil(getcmd.IntentStates(in)), Delivery: in.Status.Clusters}
			for _, t := range []string{fleetfitv1alpha1.ConditionValid, fleetfitv1alpha1.ConditionScheduled, fleetfitv1alpha1.ConditionDelivered} {
				if c := meta.FindStatusCondition(in.Status.Conditions, t); c != nil && c.Status != "True" && c.Message != "" {
					is.Message = c.Message
					break
				}
			}
			sum.Intents = append(sum.Intents, is)
		}
		slices.SortFunc(sum.Intents, func(a, b IntentSummary) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, sum)
	}
	return out
}

// nonNil makes a nil slice an empty one, which JSON writes as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
