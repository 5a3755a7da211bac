// Package steady holds the Steady prioritizer, which keeps a placement's decisions stable: as in
// OCM, the clusters the placement already decides score 100 and every other cluster scores 0.
package steady

import (
	"context"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Name is the builtIn name of the prioritizer.
const Name = "Steady"

// Steady prefers the clusters a placement already decides.
type Steady struct{}

var (
	_ framework.ScorePlugin = &Steady{}
	_ framework.MovePolicy  = &Steady{}
)

// New is the plugin's factory; Steady takes no arguments.
func New(_ framework.Handle, _ framework.Args) (framework.Plugin, error) { return &Steady{}, nil }

// Name returns the builtIn name.
func (*Steady) Name() string { return Name }

// MoveRole implements framework.MovePolicy: Steady holds the decided clusters.
func (*Steady) MoveRole() framework.MoveRole { return framework.MoveHolds }

// Score gives MaxClusterScore to the feasible clusters in req.Decided. The others keep the
// zero that scores starts with.
func (*Steady) Score(_ context.Context, _ *framework.CycleState, _ *framework.Snapshot, req *framework.Request, feasible *framework.Bitset, scores []int64) *framework.Status {
	feasible.ForEach(func(i int) {
		if req.Decided.Has(i) {
			scores[i] = framework.MaxClusterScore
		}
	})
	return nil
}
