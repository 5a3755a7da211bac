package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetfit/fleetfit/test/framework"
)

// TestHubKilledInBurst kills fleetfit-hub with SIGKILL while it works through a burst of 40
// intents, creates the rest of the burst while it is down, and starts it again with the same
// command line. Every placement ends Satisfied with its ManifestWork on its decided cluster,
// and through it all no ManifestWork was deleted or made twice, and no decision removed.
func TestHubKilledInBurst(t *testing.T) {
	const (
		burst = 40
		// killAfter is how many ManifestWorks the hub has written when it is killed: some of
		// the burst is decided and delivered, some is not.
		killAfter = 5
		cpu       = "500m"
	)
	e := newEnv(t, "kill-hub")
	e.startAgents()
	works := e.recordWorks()
	decisions := e.recordDecisions()
	hub := e.startHub()

	e.createWorkloads("burst", 0, burst/2, cpu)
	e.eventuallyWithin(framework.EventuallyTimeout, fmt.Sprintf("at least %d ManifestWorks before killing the hub", killAfter), func(ctx context.Context) error {
		got, err := e.deliveries(ctx)
		if err == nil && len(got) < killAfter {
			err = fmt.Errorf("%d intents delivered", len(got))
		}
		return err
	})
	if err := hub.Kill(); err != nil {
		t.Fatal(err)
	}
	delivered, err := e.deliveries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed fleetfit-hub with %d of %d intents delivered", len(delivered), burst/2)
	e.createWorkloads("burst", burst/2, burst, cpu)
	if err := framework.RestartHubProcess(t.Context(), hub); err != nil {
		t.Fatal(err)
	}

	all := names("burst", 0, burst)
	e.eventuallyWithin(convergeTimeout, fmt.Sprintf("all %d placements Satisfied on one cluster each, with their ManifestWorks there", burst), func(ctx context.Context) error {
		return e.checkConverged(ctx, all)
	})
	framework.Consistently(t, settle, func(ctx context.Context) error { return e.checkConverged(ctx, all) })
	if err := works.check(burst); err != nil {
		t.Error(err)
	}
	if err := decisions.checkNoneRemoved(); err != nil {
		t.Error(err)
	}
}

// TestHubRestartWithOldInventories stops every agent, waits until the hub takes all
// inventories for stale, and restarts the hub: the restarted hub sees nothing fresh to
// schedule on, and must keep every decision as it was — not one PlacementDecision changes,
// even after its startup grace and a scheduling cycle of every placement.
func TestHubRestartWithOldInventories(t *testing.T) {
	const (
		staleAfter   = 15 * time.Second
		startupGrace = 2 * time.Second
		// watchAfter is how long the decisions are compared after the restart: well past the
		// startup grace, with a cycle of every placement in the middle.
		watchAfter = 15 * time.Second
		workloads  = 6
	)
	requireHubFlags(t, "inventory-stale-after", "startup-grace")
	e := newEnv(t, "old-inventories")
	e.startAgents()
	args := []string{"--inventory-stale-after=" + staleAfter.String(), "--startup-grace=" + startupGrace.String()}
	hub := e.startHub(args...)
	e.createWorkloads("app", 0, workloads, "1")
	all := names("app", 0, workloads)
	framework.Eventually(t, func(ctx context.Context) error { return e.checkConverged(ctx, all) })
	before, err := e.decisionObjects(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	works := e.recordWorks()
	decisions := e.recordDecisions()

	e.killAgents()
	e.waitStale(hub, spokes, staleAfter+framework.EventuallyTimeout)
	if err := hub.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := framework.RestartHubProcess(t.Context(), hub); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	// The restarted hub has read the inventories, and takes them for stale too.
	e.waitStale(hub, spokes, framework.EventuallyTimeout)

	unchanged := func(ctx context.Context) error {
		after, err := e.decisionObjects(ctx)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(before, after); diff != "" {
			return fmt.Errorf("expected every PlacementDecision unchanged after the restart, saw at %v after it (-before,+after):\n%s",
				time.Since(restarted).Round(time.Second), diff)
		}
		return nil
	}
	framework.Consistently(t, startupGrace+time.Second, unchanged)
	e.relabelClusters("after-restart")
	framework.Consistently(t, watchAfter-startupGrace-time.Second, unchanged)
	if err := works.check(workloads); err != nil {
		t.Error(err)
	}
	if err := decisions.checkNoneRemoved(); err != nil {
		t.Error(err)
	}
}

// decidedBy returns, per placement, the clusters it decides.
func decidedBy(ps map[string]placementState) map[string][]string {
	out := map[string][]string{}
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		out[name] = ps[name].Clusters
	}
	return out
}
