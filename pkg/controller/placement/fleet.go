package placement

import (
	"time"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Fleet returns the scheduler's current snapshot, with the in-flight reservations, and the
// controller's time: what read-only queries over the fleet (allocation candidates) answer from,
// the same the scheduling cycles see.
func (c *Controller) Fleet() (*framework.Snapshot, time.Time) {
	return c.cache.Snapshot(), c.opts.Clock.Now()
}
