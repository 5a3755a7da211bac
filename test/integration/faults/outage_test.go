package faults

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetfit/fleetfit/test/framework"
)

// TestAPIServerPausedForAMinute stops the hub's kube-apiserver (SIGSTOP) for a minute while
// fleetfit-hub and the agents run, then lets it run again. Every request of the hub in that
// minute fails or hangs; its retries back off, but never beyond about a minute, so placements
// created after the API server is back are decided within recoveryTimeout. What was decided
// before stays as it was.
func TestAPIServerPausedForAMinute(t *testing.T) {
	const (
		pause = 60 * time.Second
		// recoveryTimeout bounds how long after the API server is back new placements may
		// wait: the longest retry backoff (about a minute), plus time to decide and deliver.
		recoveryTimeout = 90 * time.Second
		workloads       = 6
		after           = 3
	)
	e := newEnv(t, "api-outage")
	e.startAgents()
	e.startHub()
	e.createWorkloads("app", 0, workloads, "1")
	all := names("app", 0, workloads)
	framework.Eventually(t, func(ctx context.Context) error { return e.checkConverged(ctx, all) })
	ps, err := e.placements(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	before := decidedBy(ps)
	works := e.recordWorks()
	decisions := e.recordDecisions()

	if err := fleet.Hub.PauseAPIServer(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = fleet.Hub.ResumeAPIServer()
		}
	})
	e.sleep(pause)
	if err := fleet.Hub.ResumeAPIServer(); err != nil {
		t.Fatal(err)
	}
	resumed = true
	resumedAt := time.Now()

	// The test's own requests may meet an API server still catching up: create with retries.
	for _, name := range names("after", 0, after) {
		e.eventuallyWithin(framework.EventuallyTimeout, "creating "+name+" after the API server is back", func(ctx context.Context) error {
			return e.createWorkload(ctx, name, "1")
		})
	}
	afterNames := names("after", 0, after)
	e.eventuallyWithin(recoveryTimeout, fmt.Sprintf("the %d placements created after the API server came back Satisfied and delivered", after), func(ctx context.Context) error {
		return e.checkConverged(ctx, afterNames)
	})
	t.Logf("new placements decided and delivered %v after the API server came back", time.Since(resumedAt).Round(time.Second))

	framework.Consistently(t, settle, func(ctx context.Context) error {
		ps, err := e.placements(ctx)
		if err != nil {
			return err
		}
		got := decidedBy(ps)
		for _, name := range afterNames {
			delete(got, name)
		}
		if diff := cmp.Diff(before, got); diff != "" {
			return fmt.Errorf("expected the decisions of before the outage unchanged after it (-before,+after):\n%s", diff)
		}
		return nil
	})
	if err := works.check(workloads + after); err != nil {
		t.Error(err)
	}
	if err := decisions.checkNoneRemoved(); err != nil {
		t.Error(err)
	}
}
