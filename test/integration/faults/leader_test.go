package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/test/framework"
)

// TestLeaderHandoverNoDoubleBooking runs two fleetfit-hub replicas with leader election and
// kills the leader (SIGKILL: its lease is not released) in the middle of a burst of intents
// that together need more than the fleet has. The replica that takes over restores the
// capacity promised by decisions the inventories do not show yet, so that no cluster is ever
// promised more than its nodes hold: at no moment do more placements decide a cluster than it
// has room for, the fleet ends full, and the placements that do not fit are not Satisfied.
func TestLeaderHandoverNoDoubleBooking(t *testing.T) {
	const (
		burst = 20
		cpu   = "3"
		// killAfter is how many placements are decided when the leader is killed.
		killAfter = 3
		// leaseDuration is short so that the handover happens within the test's time.
		leaseDuration = 4 * time.Second
	)
	e := newEnv(t, "handover")
	e.startAgents()
	slots := e.slots(resource.MustParse(cpu))
	room := 0
	for _, n := range slots {
		room += n
	}
	if room >= burst {
		t.Fatalf("the fleet has room for %d replicas of %s cpu, the burst of %d must need more", room, cpu, burst)
	}
	works := e.recordWorks()
	decisions := e.recordDecisions()
	args := []string{
		"--leader-elect=true",
		"--leader-elect-namespace=" + e.ns,
		"--leader-elect-lease-duration=" + leaseDuration.String(),
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
	}
	replicas := []*framework.Component{e.startHub(args...), e.startHub(args...)}
	leader := e.waitLeader(replicas)

	e.createWorkloads("burst", 0, burst/2, cpu)
	e.eventuallyWithin(framework.EventuallyTimeout, fmt.Sprintf("at least %d placements decided before killing the leader", killAfter), func(ctx context.Context) error {
		ps, err := e.placements(ctx)
		if err != nil {
			return err
		}
		decided := 0
		for _, st := range ps {
			if len(st.Clusters) > 0 {
				decided++
			}
		}
		if decided < killAfter {
			return fmt.Errorf("%d placements decided", decided)
		}
		return nil
	})
	if err := replicas[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	e.createWorkloads("burst", burst/2, burst, cpu)
	follower := 1 - leader
	e.eventuallyWithin(framework.EventuallyTimeout, "the other replica to take over", func(context.Context) error {
		if !logContains(replicas[follower], "Started leading") {
			return fmt.Errorf("%s has not started leading %v after the leader was killed", replicas[follower].Name(), time.Since(killed).Round(time.Second))
		}
		return nil
	})
	t.Logf("the other replica took over within %v", time.Since(killed).Round(time.Second))
	if err := framework.RestartHubProcess(t.Context(), replicas[leader]); err != nil {
		t.Fatal(err)
	}

	all := names("burst", 0, burst)
	want := min(burst, room)
	check := func(ctx context.Context) error {
		ps, err := e.placements(ctx)
		if err != nil {
			return err
		}
		delivered, err := e.deliveries(ctx)
		if err != nil {
			return err
		}
		var errs []error
		load := map[string]int{}
		satisfied := 0
		for _, name := range all {
			st := ps[name]
			for _, c := range st.Clusters {
				load[c]++
			}
			if st.Satisfied {
				satisfied++
			}
			switch {
			case len(st.Clusters) > 1:
				errs = append(errs, fmt.Errorf("placement %s decides %v, want at most one cluster", name, st.Clusters))
			case st.Satisfied != (len(st.Clusters) == 1):
				errs = append(errs, fmt.Errorf("placement %s: Satisfied=%v with decisions %v, want Satisfied exactly when it decides its one cluster", name, st.Satisfied, st.Clusters))
			case !slices.Equal(delivered[name], st.Clusters):
				errs = append(errs, fmt.Errorf("intent %s: ManifestWorks on %v, decisions on %v, want the same clusters", name, delivered[name], st.Clusters))
			}
		}
		for _, c := range slices.Sorted(maps.Keys(load)) {
			if load[c] > slots[c] {
				errs = append(errs, fmt.Errorf("expected at most %d intents of %s cpu on %s (what its nodes hold), saw %d decided", slots[c], cpu, c, load[c]))
			}
		}
		if satisfied != want {
			errs = append(errs, fmt.Errorf("expected %d placements Satisfied (the fleet's room for %s-cpu replicas), saw %d (decided per cluster: %v)", want, cpu, satisfied, load))
		}
		return summarise(errs)
	}
	e.eventuallyWithin(convergeTimeout, fmt.Sprintf("%d of %d placements Satisfied without over-committing a cluster", want, burst), check)
	framework.Consistently(t, settle, check)

	peaks, err := decisions.peaks()
	if err != nil {
		t.Fatal(err)
	}
	var errs []error
	for _, c := range slices.Sorted(maps.Keys(peaks)) {
		if peaks[c] > slots[c] {
			errs = append(errs, fmt.Errorf("expected at most %d intents of %s cpu on %s at any moment (what its nodes hold), saw %d decided at once", slots[c], cpu, c, peaks[c]))
		}
	}
	if err := errors.Join(errs...); err != nil {
		t.Error(err)
	}
	if err := works.check(want); err != nil {
		t.Error(err)
	}
	if err := decisions.checkNoneRemoved(); err != nil {
		t.Error(err)
	}
}

// waitLeader waits until exactly one replica has started leading and returns its index.
func (e *env) waitLeader(replicas []*framework.Component) int {
	e.t.Helper()
	leader := -1
	e.eventuallyWithin(framework.EventuallyTimeout, "one replica leading", func(context.Context) error {
		var leading []int
		for i, r := range replicas {
			if logContains(r, "Started leading") {
				leading = append(leading, i)
			}
		}
		if len(leading) != 1 {
			return fmt.Errorf("replicas %v have started leading", leading)
		}
		leader = leading[0]
		return nil
	})
	return leader
}

// slots returns, per cluster, how many replicas requesting cpu its nodes hold, one replica
// never split across nodes: what each node has, less the test's marker pod, divided by the
// request and rounded down.
func (e *env) slots(cpu resource.Quantity) map[string]int {
	out := map[string]int{}
	for i := range fleet.Spokes {
		n := 0
		for _, node := range nodes {
			free := resource.MustParse(node.cpu)
			if node.name == markerNode {
				free.Sub(e.markerCPU)
			}
			n += int(free.MilliValue() / cpu.MilliValue())
		}
		out[framework.SpokeName(i)] = n
	}
	return out
}
