package workers

import (
	"testing"
	"time"
)

func TestProgressStalled(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	queued := 0
	var p Progress
	if err := p.Stalled(t0.Add(time.Hour), time.Minute); err != nil {
		t.Errorf("a loop that never started is stalled: %v", err)
	}
	p.start(t0, func() int { return queued })
	if err := p.Stalled(t0.Add(time.Hour), time.Minute); err != nil {
		t.Errorf("an idle loop is stalled: %v", err)
	}
	queued = 3
	if err := p.Stalled(t0.Add(30*time.Second), time.Minute); err != nil {
		t.Errorf("a loop with work is stalled before the threshold: %v", err)
	}
	if err := p.Stalled(t0.Add(2*time.Minute), time.Minute); err == nil {
		t.Error("a loop with queued work and no sync for 2m is not stalled")
	}
	queued = 0
	p.begin()
	if err := p.Stalled(t0.Add(2*time.Minute), time.Minute); err == nil {
		t.Error("a loop with a sync in progress for 2m is not stalled")
	}
	p.done(t0.Add(2 * time.Minute))
	if err := p.Stalled(t0.Add(5*time.Minute), time.Minute); err != nil {
		t.Errorf("a loop whose sync returned and that is idle is stalled: %v", err)
	}
}
