package faults

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetfit/fleetfit/test/framework"
)

// TestSilentAgentsKeepWorkloads kills every agent and keeps them down for more than twice the
// hub's --inventory-stale-after (45 s for 20 s: at the default of 10 minutes, a quarter of an
// hour of silence), while scheduling cycles run for every placement (the clusters are
// relabelled) and new placements arrive. Silence is not absence: no decision is removed and no
// ManifestWork deleted; the hub says the clusters are stale, and places nothing new on them.
// Once the agents report again, the clusters are fresh and the new placements are decided.
func TestSilentAgentsKeepWorkloads(t *testing.T) {
	const (
		staleAfter = 20 * time.Second
		silence    = 45 * time.Second
		// cycleEvery is how often the clusters are relabelled during the silence.
		cycleEvery = 5 * time.Second
		workloads  = 6
		late       = 2
	)
	requireHubFlags(t, "inventory-stale-after")
	e := newEnv(t, "silent-agents")
	e.startAgents()
	hub := e.startHub("--inventory-stale-after=" + staleAfter.String())
	e.waitStale(hub, 0, framework.EventuallyTimeout)
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

	e.killAgents()
	killed := time.Now()
	unchanged := func(ctx context.Context) error {
		ps, err := e.placements(ctx)
		if err != nil {
			return err
		}
		got := decidedBy(ps)
		for _, name := range names("late", 0, late) {
			if len(got[name]) > 0 {
				return fmt.Errorf("expected no decision onto a cluster with a stale inventory, saw placement %s decide %v %v after the agents stopped",
					name, got[name], time.Since(killed).Round(time.Second))
			}
			delete(got, name)
		}
		if diff := cmp.Diff(before, got); diff != "" {
			return fmt.Errorf("expected the decisions unchanged while the agents are silent, saw %v after they stopped (-before,+now):\n%s",
				time.Since(killed).Round(time.Second), diff)
		}
		return nil
	}
	for n := 0; time.Since(killed) < silence; n++ {
		e.relabelClusters(fmt.Sprint(n))
		if n == 0 {
			// Before the inventories are stale, a scheduling cycle changes nothing either.
			framework.Consistently(t, time.Second, unchanged)
		}
		framework.Consistently(t, min(cycleEvery, silence-time.Since(killed)), unchanged)
		if time.Since(killed) > staleAfter+cycleEvery && e.countLate(t.Context()) == 0 {
			// The hub has had a cycle's time to see the inventories go stale.
			e.waitStale(hub, spokes, framework.EventuallyTimeout)
			e.createWorkloadsSeen("late", 0, late, "1")
		}
	}
	if e.countLate(t.Context()) == 0 {
		t.Fatalf("the silence of %v ended before the inventories were stale for a cycle: nothing checked", silence)
	}
	framework.Consistently(t, settle, unchanged)
	e.waitStale(hub, spokes, framework.EventuallyTimeout)

	e.restartAgents()
	e.waitStale(hub, 0, framework.EventuallyTimeout)
	lateNames := names("late", 0, late)
	framework.Eventually(t, func(ctx context.Context) error { return e.checkConverged(ctx, lateNames) })
	ps, err = e.placements(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := decidedBy(ps)
	for _, name := range lateNames {
		delete(got, name)
	}
	if diff := cmp.Diff(before, got); diff != "" {
		t.Errorf("expected the decisions of before the silence unchanged after it (-before,+after):\n%s", diff)
	}
	if err := works.check(workloads + late); err != nil {
		t.Error(err)
	}
	if err := decisions.checkNoneRemoved(); err != nil {
		t.Error(err)
	}
}

// countLate returns how many of the late placements exist.
func (e *env) countLate(ctx context.Context) int {
	ps, err := e.placements(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for name := range ps {
		if strings.HasPrefix(name, "late-") {
			n++
		}
	}
	return n
}
