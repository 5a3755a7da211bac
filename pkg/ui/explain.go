package ui

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli/getcmd"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// ReadAtHeader carries, on explain answers, when the hub was read: the body is exactly the
// hub's debug JSON, which has no place for it.
const ReadAtHeader = "X-Fleetfit-Read-At"

// MaxWhatIfSize is the most a what-if may post, as the hub's dry run takes.
const MaxWhatIfSize = 4 << 20

// serveExplain explains one placement as `fleetfit explain placement NAME -n NAMESPACE -o
// json` does: the placement scheduled once more by the hub's scheduler over the fleet as the
// hub holds it, nothing written. The body is the JSON of the hub's debug endpoint
// (placement.DebugResult), errors included: a placement that does not exist is 404 with its
// error, one the hub does not schedule says why in its error.
func (s *Server) serveExplain(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	key := ns + "/" + name
	snap, err := s.snapshots.get(r.Context(), wholeView)
	if err != nil {
		writeHubError(w, r, err)
		return
	}
	w.Header().Set(ReadAtHeader, snap.readAt.UTC().Format(time.RFC3339Nano))
	if a, ok := snap.explained.Load(key); ok {
		a := a.(*explainAnswer)
		writeJSON(w, a.code, a.body)
		return
	}
	a := explain(r.Context(), snap, ns, name)
	if a.code != http.StatusInternalServerError {
		snap.explained.Store(key, a)
	}
	writeJSON(w, a.code, a.body)
}

// explainAnswer is the status code and body of one explanation.
type explainAnswer struct {
	code int
	body placement.DebugResult
}

func explain(ctx context.Context, snap *snapshot, ns, name string) *explainAnswer {
	key := ns + "/" + name
	res, err := simulate.Run(ctx, snap.fleet, simulate.Options{Now: snap.readAt, Only: []string{key}})
	if err != nil {
		return &explainAnswer{http.StatusInternalServerError, placement.DebugResult{Explanation: scheduler.Explanation{Placement: key, Error: err.Error()}}}
	}
	if len(res.Placements) == 0 {
		return &explainAnswer{http.StatusNotFound, placement.DebugResult{Explanation: scheduler.Explanation{
			Placement: key, Error: fmt.Sprintf("placement %q not found in namespace %q", name, ns)}}}
	}
	pr := &res.Placements[0]
	if pr.Explanation == nil {
		return &explainAnswer{http.StatusOK, placement.DebugResult{Explanation: scheduler.Explanation{
			Placement: key, Clusters: []scheduler.ClusterVerdict{}, Decisions: []scheduler.Decision{},
			Error: "the placement is not scheduled by fleetfit: " + pr.Skipped}}}
	}
	return &explainAnswer{http.StatusOK, placement.DebugResult{Explanation: *pr.Explanation}}
}

// WhatIf is the answer of POST /api/whatif: what the hub would decide for the posted
// Placements, with the posted HPAIntents, as `fleetfit simulate --from-hub -f` prints it.
type WhatIf struct {
	ReadAt     time.Time         `json:"readAt"`
	Placements []WhatIfPlacement `json:"placements"`
	Intents    []WhatIfIntent    `json:"intents"`
}

// WhatIfPlacement is one row of simulate's placement table, with the explanation behind it.
type WhatIfPlacement struct {
	Placement string   `json:"placement"`
	Selected  string   `json:"selected"`
	Clusters  []string `json:"clusters"`
	Satisfied string   `json:"satisfied"`
	Reason    string   `json:"reason"`
	Message   string   `json:"message,omitempty"`
	// Skipped says why the hub would not schedule it.
	Skipped     string                 `json:"skipped,omitempty"`
	Explanation *scheduler.Explanation `json:"explanation,omitempty"`
}

// WhatIfIntent is one row of simulate's HPAIntent table.
type WhatIfIntent struct {
	Intent    string `json:"intent"`
	Valid     string `json:"valid"`
	Scheduled string `json:"scheduled"`
	Message   string `json:"message,omitempty"`
}

// serveWhatIf schedules posted Placements and HPAIntents (YAML or JSON, a fleet file of those
// two kinds) over the hub's fleet, as `fleetfit simulate --from-hub -f FILE` does: they are
// checked as the hub's API server would check them, replace the hub's objects of the same
// name as if applied, and are scheduled by the hub's own scheduler. Only the placements they
// concern are scheduled: every other placement keeps the decisions the hub holds, as it does
// on the hub, which keeps one answer's cost that of one scheduling cycle per placement posted.
func (s *Server) serveWhatIf(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxWhatIfSize+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", "reading the request: "+err.Error())
		return
	}
	if len(body) > MaxWhatIfSize {
		writeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", fmt.Sprintf("post at most %d bytes", MaxWhatIfSize))
		return
	}
	posted := &simulate.Fleet{}
	if err := posted.Decode(r.Context(), bytes.NewReader(body), "the posted text"); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	if err := onlyPlacementsAndIntents(posted); err != nil {
		writeError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	snap, err := s.snapshots.get(r.Context(), wholeView)
	if err != nil {
		writeHubError(w, r, err)
		return
	}
	fleet := cloneFleet(snap.fleet)
	fleet.Apply(posted)
	var only []string
	for _, p := range posted.Placements {
		only = append(only, p.Namespace+"/"+p.Name)
	}
	for _, in := range posted.Intents {
		only = append(only, in.Namespace+"/"+in.Spec.PlacementRef.Name)
	}
	res, err := simulate.Run(r.Context(), fleet, simulate.Options{Now: snap.readAt, Only: only})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, whatIfAnswer(snap.readAt, res, posted))
}

// onlyPlacementsAndIntents refuses a what-if that holds anything but Placements and
// HPAIntents, or no Placement nor HPAIntent: the page asks what the hub would decide, over the
// fleet the hub holds.
func onlyPlacementsAndIntents(f *simulate.Fleet) error {
	others := len(f.Clusters) + len(f.Sets) + len(f.Bindings) + len(f.Scores) + len(f.Inventories) + len(f.Decisions) + len(f.Nodes) + len(f.Pods) + len(f.MachineGroups)
	switch {
	case others > 0:
		return fmt.Errorf("post Placements and HPAIntents only: the rest of the fleet is the hub's (fleetfit simulate -f schedules whole fleet files)")
	case len(f.Placements) == 0 && len(f.Intents) == 0:
		return fmt.Errorf("post a Placement, an HPAIntent, or both")
	}
	return nil
}

// cloneFleet copies the slices of f that Apply changes, so that the snapshot every request
// shares stays as it was read.
func cloneFleet(f *simulate.Fleet) *simulate.Fleet {
	g := *f
	g.Clusters, g.Sets, g.Bindings = slices.Clone(f.Clusters), slices.Clone(f.Sets), slices.Clone(f.Bindings)
	g.Scores, g.Inventories, g.Decisions = slices.Clone(f.Scores), slices.Clone(f.Inventories), slices.Clone(f.Decisions)
	g.Placements, g.Intents = slices.Clone(f.Placements), slices.Clone(f.Intents)
	return &g
}

// whatIfAnswer reads the result as simulate's tables do.
func whatIfAnswer(readAt time.Time, res *simulate.Result, posted *simulate.Fleet) *WhatIf {
	out := &WhatIf{ReadAt: readAt, Placements: []WhatIfPlacement{}, Intents: []WhatIfIntent{}}
	for i := range res.Placements {
		pr := &res.Placements[i]
		clusters := []string{}
		for _, d := range pr.Decisions {
			for _, cd := range d.Status.Decisions {
				clusters = append(clusters, cd.ClusterName)
			}
		}
		satisfied, reason, message := getcmd.Satisfied(pr.Placement)
		if pr.Skipped != "" {
			satisfied, reason = "Unknown", "NotScheduled"
		}
		out.Placements = append(out.Placements, WhatIfPlacement{
			Placement: pr.Key(), Selected: getcmd.Selected(pr.Placement, len(clusters)), Clusters: clusters,
			Satisfied: satisfied, Reason: reason, Message: message, Skipped: pr.Skipped, Explanation: pr.Explanation,
		})
	}
	mine := map[string]bool{}
	for _, in := range posted.Intents {
		mine[in.Namespace+"/"+in.Name] = true
	}
	for _, p := range posted.Placements {
		for _, in := range res.Intents {
			if in.Namespace == p.Namespace && in.Spec.PlacementRef.Name == p.Name {
				mine[in.Namespace+"/"+in.Name] = true
			}
		}
	}
	for _, in := range res.Intents {
		if !mine[in.Namespace+"/"+in.Name] {
			continue
		}
		row := WhatIfIntent{Intent: in.Namespace + "/" + in.Name, Valid: "Unknown", Scheduled: "Unknown"}
		if c := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionValid); c != nil {
			row.Valid = string(c.Status)
			if c.Status != "True" {
				row.Message = c.Message
			}
		}
		if c := meta.FindStatusCondition(in.Status.Conditions, fleetfitv1alpha1.ConditionScheduled); c != nil {
			row.Scheduled = string(c.Status)
			row.Message = cmp.Or(row.Message, c.Message)
		}
		out.Intents = append(out.Intents, row)
	}
	return out
}
