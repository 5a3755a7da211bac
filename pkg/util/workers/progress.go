package workers

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Progress records whether a loop gets its work done, for a health check that fails when a
// controller is stuck: keys are waiting or being synced, and no sync has returned for a while.
// An idle loop is healthy however long it has been idle. The zero value is ready to use; a
// loop that has not started (a replica that is not the leader) is healthy.
type Progress struct {
	started  atomic.Bool
	lastDone atomic.Int64 // UnixNano of the last sync that returned, or of the start
	busy     atomic.Int32 // syncs in progress
	queued   func() int
}

func (p *Progress) start(now time.Time, queued func() int) {
	if p == nil {
		return
	}
	p.queued = queued
	p.lastDone.Store(now.UnixNano())
	p.started.Store(true)
}

func (p *Progress) begin() {
	if p != nil {
		p.busy.Add(1)
	}
}

func (p *Progress) done(now time.Time) {
	if p != nil {
		p.lastDone.Store(now.UnixNano())
		p.busy.Add(-1)
	}
}

// Stalled returns an error when work is waiting or in progress and no sync has returned for
// longer than after, at now.
func (p *Progress) Stalled(now time.Time, after time.Duration) error {
	if p == nil || !p.started.Load() {
		return nil
	}
	queued, busy := p.queued(), p.busy.Load()
	if queued == 0 && busy == 0 {
		return nil
	}
	if since := now.Sub(time.Unix(0, p.lastDone.Load())); since > after {
		return fmt.Errorf("no sync has finished for %s while %d key(s) wait and %d are in progress", since.Round(time.Second), queued, busy)
	}
	return nil
}
