package hardwarefit

import (
	"context"
	"fmt"
	"time"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// backoff is a cluster an intent of the placement moved away from because its pods stayed
// unschedulable there (status.moves): the cluster is not feasible for the placement until the
// back-off ends, whether the placement decides it or not, so that the next cycle replaces it.
type backoff struct {
	intent string
	move   *fleetfitv1alpha1.ClusterMove
}

// backoffs returns the clusters in back-off at now for any of the intents, by name, and when
// the first of those back-offs ends.
func backoffs(intents []*fleetfitv1alpha1.HPAIntent, now time.Time) (map[string]backoff, time.Time) {
	var out map[string]backoff
	var first time.Time
	for _, in := range intents {
		for k := range in.Status.Moves {
			from := in.Status.Moves[k].From
			m, ok := in.Status.BackedOff(from, now)
			if !ok {
				continue
			}
			if out == nil {
				out = map[string]backoff{}
			}
			if b, seen := out[from]; !seen || b.move.BackoffUntil.Before(&m.BackoffUntil) {
				out[from] = backoff{intent: in.Name, move: m}
			}
			if first.IsZero() || m.BackoffUntil.Time.Before(first) {
				first = m.BackoffUntil.Time
			}
		}
	}
	return out, first
}

// why words the back-off for explain and the intent's condition.
func (b backoff) why() string {
	return fmt.Sprintf("HPAIntent %s moved away from this cluster at %s (%s); not chosen again for it until %s (back-off after %d move(s) away from it)",
		b.intent, b.move.Time.UTC().Format(time.RFC3339), b.move.Reason, b.move.BackoffUntil.UTC().Format(time.RFC3339), b.move.Failures)
}

// RequeueAfter implements framework.RequeuePlugin: a cycle runs again when the first back-off
// ends, so that a placement waiting for clusters may take that cluster again.
func (p *HardwareFit) RequeueAfter(_ context.Context, state *framework.CycleState, snap *framework.Snapshot, req *framework.Request) time.Duration {
	if len(req.Intents) == 0 {
		return 0
	}
	s := stateOf(state, snap, req)
	if s.backoffEnds.IsZero() {
		return 0
	}
	return max(s.backoffEnds.Sub(req.Now), time.Second)
}
