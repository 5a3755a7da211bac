// Package steady measures, end to end on a real hub API server, whether fleetfit-hub holds
// still on a living fleet: agents keep reporting, nothing that a decision depends on changes,
// and the hub should spend little, write little and move nothing, while still answering at
// once when a report does make room for a placement that waits. Run it with
// `make bench-steady`.
//
// Each run gets a fresh hub control plane with, created before fleetfit-hub starts (a backlog):
// N managed clusters, Available, in one exclusive cluster set bound to five namespaces; for
// each cluster its namespace and its ClusterInventory, written as fleetfit-agent writes it
// (the status that pkg/inventory computes from 4-8 Nodes and their Pods — A100 and T4 GPU
// nodes, tainted nvidia.com/gpu, with at most two GPUs free, CPU nodes, some with AVX-512 —
// with the agent's version, a revision and observedAt); and P Placements (numberOfClusters 3) with one HPAIntent each: one
// consumer asking for cpu and memory per replica (one in four also for an A100) and a small
// Deployment to deliver, so that fleetfit-hub's action controller creates a ManifestWork per
// decided cluster. One placement in ten asks for four GPUs on one node, which no node has
// free, with cpu and memory that no other waiting placement asks for; those wait, unsatisfied.
//
// Phases:
//  1. fleetfit-hub runs as a process with its default flags plus FLEETFIT_BENCH_HUB_ARGS (split
//     on spaces). The run waits until the hub has judged every placement (once its own
//     validation found the intent Valid), satisfied every satisfiable one, created every
//     ManifestWork, and changed no decision and no ManifestWork for five seconds. Meanwhile every
//     cluster heartbeats once every 2.5 minutes, as a quiet agent does.
//  2. For FLEETFIT_BENCH_DURATION (default 60s), reports go to the ClusterInventories at
//     FLEETFIT_BENCH_RATE per second (default N/60: every cluster once a minute), round-robin:
//     each a full status update with a new observedAt, every other one also with a pod of
//     200m cpu come or gone on one CPU node (a new revision), which no decision depends on.
//     FLEETFIT_BENCH_FREES times (default 5), spread over the phase, a report adds to one
//     cluster a node with exactly the room that one waiting placement asks for, and that
//     placement alone; the run measures from the write's success until the placement's
//     decisions name the cluster. Meanwhile it counts every change of a placement's decided
//     clusters and every ManifestWork created and deleted; those the rooms called for are
//     counted apart.
//  3. Per size it reports the reports per second achieved; fleetfit-hub's CPU cores over the
//     phase, the hub API server's and etcd's, and their ratio; scheduling cycles per report
//     (fleetfit_scheduler_cycles_total); the hub's writes per second (the API server's
//     apiserver_request_total by verb, less the reports and the API server's own
//     bookkeeping, since fleetfit-hub runs as the hub's admin like the benchmark); decision
//     changes, ManifestWork deletes and creations nothing called for; and the median and
//     maximum seconds from a room's write to its placement's decision.
//
// Nothing runs on the clusters: the reports never show the delivered pods, so the hub's
// reservations for them lapse as they would for pods that never start.
//
// With FLEETFIT_BENCH_PROFILE=<dir> (and --profiling in FLEETFIT_BENCH_HUB_ARGS), fleetfit-hub's
// CPU profile of the phase's first FLEETFIT_BENCH_PROFILE_SECONDS (30) is written there.
//
// Sizes: 500 clusters × 200 placements; FLEETFIT_BENCH_LARGE=1 adds 2,000 × 1,000 and 10,000 ×
// 5,000; FLEETFIT_BENCH_CLUSTERS × FLEETFIT_BENCH_PLACEMENTS sets one size instead (at most
// 6,000 placements, so that no two waiting placements ask for the same room).
package steady

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) {
	// As in test/bench/placement: clients list the classic way, since a streamed list waits on
	// a fresh API server for its first bookmark. The fleetfit-hub process inherits it.
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	framework.Main(m)
}

const (
	// quiet is how long the hub must change nothing before the steady phase starts.
	quiet = 5 * time.Second
	// settleTimeout bounds the first phase.
	settleTimeout = 30 * time.Minute
	// roomTimeout is how long after the steady phase a room's placement may still take.
	roomTimeout = 2 * time.Minute
	// maxWaiting bounds the waiting placements: beyond it, two would ask for the same room
	// (see waitingNeed).
	maxWaiting = 600
)

type size struct{ clusters, placements int }

func (s size) String() string { return fmt.Sprintf("%dx%d", s.clusters, s.placements) }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

func sizes() []size {
	if os.Getenv("FLEETFIT_BENCH_CLUSTERS") != "" || os.Getenv("FLEETFIT_BENCH_PLACEMENTS") != "" {
		return []size{{max(1, envInt("FLEETFIT_BENCH_CLUSTERS", 500)), max(1, envInt("FLEETFIT_BENCH_PLACEMENTS", 200))}}
	}
	out := []size{{500, 200}}
	if os.Getenv("FLEETFIT_BENCH_LARGE") != "" {
		out = append(out, size{2000, 1000}, size{10000, 5000})
	}
	return out
}

// settings are the steady phase's parameters for a size.
type settings struct {
	duration time.Duration
	rate     float64
	rooms    int
}

func settingsFor(b *testing.B, sz size) settings {
	s := settings{duration: time.Minute, rate: float64(sz.clusters) / 60, rooms: envInt("FLEETFIT_BENCH_FREES", 5)}
	if v := os.Getenv("FLEETFIT_BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("FLEETFIT_BENCH_DURATION=%q: want a positive duration", v)
		}
		s.duration = d
	}
	if v := os.Getenv("FLEETFIT_BENCH_RATE"); v != "" {
		r, err := strconv.ParseFloat(v, 64)
		if err != nil || r <= 0 {
			b.Fatalf("FLEETFIT_BENCH_RATE=%q: want a positive number of reports per second", v)
		}
		s.rate = r
	}
	return s
}

// hubArgs are the flags fleetfit-hub runs with besides its defaults.
func hubArgs() []string { return strings.Fields(os.Getenv("FLEETFIT_BENCH_HUB_ARGS")) }

// result is one run's steady phase.
type result struct {
	elapsed          time.Duration
	reports          int64
	hubCPU, planeCPU time.Duration
	cycles           float64
	// requests are the API server's requests during the phase by "VERB resource[/sub]";
	// hubWrites those of them fleetfit-hub wrote.
	requests  map[string]float64
	hubWrites float64
	counts    counts
	examples  []string
	rooms     int
	latencies []time.Duration
	undecided int
	// lag is how far behind the reports fleetfit-hub handled them; queueWait how long the
	// placements it requeued waited for a worker; cycleTime how long their cycles took.
	lag, queueWait, cycleTime histogram
}

func (r result) seconds() float64 { return r.elapsed.Seconds() }

// BenchmarkSteadyState reports, per size, what fleetfit-hub spends and changes while agents
// keep reporting nothing that matters, and how soon it places a waiting placement when a
// report makes room for it (see the package documentation).
func BenchmarkSteadyState(b *testing.B) {
	for _, sz := range sizes() {
		b.Run(sz.String(), func(b *testing.B) {
			var r result
			for range b.N {
				r = runOnce(b, sz, settingsFor(b, sz))
			}
			s := r.seconds()
			hubCores, planeCores := r.hubCPU.Seconds()/s, r.planeCPU.Seconds()/s
			uncalledChanges := r.counts.decisionChanges - r.counts.decisionChangesCalledFor
			uncalledCreates := r.counts.workCreates - r.counts.workCreatesCalledFor
			p50, worst := percentile(r.latencies, 0.5), percentile(r.latencies, 1)
			b.ReportMetric(float64(r.reports)/s, "reports/s")
			b.ReportMetric(hubCores, "hub-cores")
			b.ReportMetric(planeCores, "apiserver+etcd-cores")
			if planeCores > 0 {
				b.ReportMetric(hubCores/planeCores, "hub/apiserver")
			}
			if r.reports > 0 {
				b.ReportMetric(r.cycles/float64(r.reports), "cycles/report")
			}
			b.ReportMetric(r.hubWrites/s, "hub-writes/s")
			b.ReportMetric(float64(uncalledChanges), "uncalled-decision-changes")
			b.ReportMetric(float64(r.counts.workDeletes), "uncalled-work-deletes")
			b.ReportMetric(float64(uncalledCreates), "uncalled-work-creates")
			b.ReportMetric(p50.Seconds(), "s-room-to-decision-p50")
			b.ReportMetric(worst.Seconds(), "s-room-to-decision-max")
			b.ReportMetric(float64(r.undecided), "rooms-undecided")
			b.ReportMetric(0, "ns/op")
			b.Logf("%s: %.1f reports/s for %.0fs; fleetfit-hub %.3f cores, apiserver+etcd %.3f (ratio %.2f); %.2f cycles/report; hub %.2f writes/s; "+
				"decision changes %d (%d called for), %d of %d placements moved; ManifestWorks created %d (%d called for), deleted %d, updated %d (spec %d); "+
				"room to decision p50 %.2fs max %.2fs (%d of %d decided)",
				sz, float64(r.reports)/s, s, hubCores, planeCores, hubCores/max(planeCores, 1e-9), r.cycles/float64(max(r.reports, 1)), r.hubWrites/s,
				r.counts.decisionChanges, r.counts.decisionChangesCalledFor, len(r.counts.moved), sz.placements,
				r.counts.workCreates, r.counts.workCreatesCalledFor, r.counts.workDeletes, r.counts.workUpdates, r.counts.workSpecUpdates,
				p50.Seconds(), worst.Seconds(), len(r.latencies), r.rooms)
		})
	}
}

// percentile returns the q-quantile (0 < q <= 1, nearest rank) of sorted durations, 0 of none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func runOnce(b *testing.B, sz size, set settings) result {
	b.StopTimer()
	ctx := context.Background()
	hub, err := framework.StartHubPlane(ctx, "bench-steady")
	if err != nil {
		b.Fatal(err)
	}
	defer hub.Stop()
	cfg := hub.AdminConfig()
	cfg.QPS, cfg.Burst = 2000, 4000
	rep := newReporter(fleetfitclient.NewForConfigOrDie(cfg), sz.clusters)
	refs, err := populate(ctx, cfg, rep, sz.placements)
	if err != nil {
		b.Fatal(err)
	}
	var waiting []placementRef
	for _, p := range refs {
		if p.waiting >= 0 {
			waiting = append(waiting, p)
		}
	}
	if len(waiting) > maxWaiting {
		b.Fatalf("%d waiting placements; at most %d ask for distinct rooms: use at most %d placements", len(waiting), maxWaiting, maxWaiting*waitingEvery)
	}
	set.rooms = min(set.rooms, len(waiting))
	sample := rep.clusters[0]
	b.Logf("%s: fleet created; %s reports %d nodes in %d shapes, %d free vectors, %s cpu free", sz, sample.name,
		sample.last.Status.NodeCount, sample.last.Status.ShapeCount, freeVectors(&sample.last.Status), cpuFree(&sample.last.Status))

	watch, err := startFleetWatch(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer watch.stop()
	// Agents heartbeat while the hub settles: creating a large fleet takes longer than reports
	// stay fresh.
	beating, stopBeating := context.WithCancel(ctx)
	heartbeatsDone := make(chan error, 1)
	go func() { heartbeatsDone <- rep.heartbeats(beating, float64(sz.clusters)/150) }()
	hubStart := time.Now()
	proc, err := framework.StartHubProcess(ctx, hub, hubArgs()...)
	if err != nil {
		b.Fatal(err)
	}
	defer proc.Stop()
	settle(ctx, b, watch, proc, sz, len(refs)-len(waiting))
	b.Logf("%s: settled %.1fs after fleetfit-hub started", sz, time.Since(hubStart).Seconds())

	stopBeating()
	if err := <-heartbeatsDone; err != nil {
		b.Fatal(err)
	}
	hubBefore, planeBefore := usage(b, proc, hub)
	cyclesBefore := hubMetric(ctx, b, hub, proc, "fleetfit_scheduler_cycles_total")
	lagBefore, waitBefore, cycleBefore := hubHistograms(ctx, b, hub, proc)
	requestsBefore := requestCounts(ctx, b, hub)
	reportsBefore := rep.writes.Load()
	start := watch.startCounting()
	b.StartTimer()

	phase, cancel := context.WithTimeout(ctx, set.duration)
	defer cancel()
	if dir := os.Getenv("FLEETFIT_BENCH_PROFILE"); dir != "" {
		// The hub's CPU profile of the phase's first FLEETFIT_BENCH_PROFILE_SECONDS (30).
		go func() {
			seconds := envInt("FLEETFIT_BENCH_PROFILE_SECONDS", 30)
			file := filepath.Join(dir, fmt.Sprintf("fleetfit-steady-%s-cpu.pprof", sz))
			ctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+time.Minute)
			defer cancel()
			if err := framework.SaveHubProfile(ctx, hub, proc, fmt.Sprintf("/debug/pprof/profile?seconds=%d", seconds), file); err != nil {
				b.Logf("profile: %v", err)
			}
		}()
	}
	steadyErr := make(chan error, 1)
	go func() { steadyErr <- rep.steadyReports(phase, set.rate) }()
	roomErr := make(chan error, 1)
	go func() { roomErr <- makeRooms(phase, rep, watch, waiting, set, start) }()
	<-phase.Done()
	// The phase's figures are read when it ends; the writes under way then finish afterwards.
	r := result{elapsed: time.Since(start), rooms: set.rooms}
	b.StopTimer()
	r.counts, r.examples = watch.stopCounting()
	r.reports = rep.writes.Load() - reportsBefore
	hubAfter, planeAfter := usage(b, proc, hub)
	r.hubCPU, r.planeCPU = hubAfter.CPU-hubBefore.CPU, planeAfter.CPU-planeBefore.CPU
	r.cycles = hubMetric(ctx, b, hub, proc, "fleetfit_scheduler_cycles_total") - cyclesBefore
	r.requests = requestCounts(ctx, b, hub)
	for k, v := range requestsBefore {
		r.requests[k] -= v
	}
	r.hubWrites = hubWrites(r.requests)
	for _, ch := range []chan error{steadyErr, roomErr} {
		if err := <-ch; err != nil {
			b.Fatal(err)
		}
	}

	watch.waitRooms(ctx, roomTimeout)
	r.latencies, r.undecided = watch.roomLatencies()
	lag, wait, cycle := hubHistograms(ctx, b, hub, proc)
	r.lag, r.queueWait, r.cycleTime = lag.since(lagBefore), wait.since(waitBefore), cycle.since(cycleBefore)
	b.Logf("%s: reports handled by fleetfit-hub after %s; placements waited for a worker %s; cycles took %s", sz, r.lag, r.queueWait, r.cycleTime)
	for _, e := range r.examples {
		b.Logf("%s: not called for: %s", sz, e)
	}
	b.Logf("%s: requests to the hub API server during the phase: %s", sz, formatRequests(r.requests))
	if done, err := proc.Exited(); done {
		b.Fatalf("fleetfit-hub exited: %v\n%s", err, proc.LogTail(30))
	}
	return r
}

// hubHistograms reads how far behind the reports fleetfit-hub is, how long its requeued
// placements wait for a worker, and how long their cycles take.
func hubHistograms(ctx context.Context, b *testing.B, hub *framework.ControlPlane, proc *framework.Component) (lag, wait, cycle histogram) {
	lag = hubHistogram(ctx, b, hub, proc, "fleetfit_scheduler_inventory_report_lag_seconds", nil)
	wait = hubHistogram(ctx, b, hub, proc, "workqueue_queue_duration_seconds", map[string]string{"name": "placements"})
	cycle = hubHistogram(ctx, b, hub, proc, "fleetfit_scheduler_cycle_duration_seconds", nil)
	return lag, wait, cycle
}

// settle waits for the first phase to end (see fleetWatch.settled).
func settle(ctx context.Context, b *testing.B, watch *fleetWatch, proc *framework.Component, sz size, satisfiable int) {
	deadline := time.Now().Add(settleTimeout)
	for {
		ok, state, err := watch.settled(sz.placements, satisfiable, quiet)
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			return
		}
		if done, err := proc.Exited(); done {
			b.Fatalf("fleetfit-hub exited: %v\n%s", err, proc.LogTail(30))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			b.Fatalf("%s: not settled after %s: %s\n%s", sz, settleTimeout, state, proc.LogTail(30))
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// makeRooms writes set.rooms room-freeing reports, evenly spread over the phase that started at
// start: the j-th gives waiting placement j·W/rooms room on one cluster, a different one each
// time.
func makeRooms(ctx context.Context, rep *reporter, watch *fleetWatch, waiting []placementRef, set settings, start time.Time) error {
	n := len(rep.clusters)
	for j := range set.rooms {
		at := start.Add(set.duration * time.Duration(2*j+1) / time.Duration(2*set.rooms))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(at)):
		}
		p := waiting[j*len(waiting)/set.rooms]
		c := rep.clusters[(j*n/set.rooms+n/(2*set.rooms))%n]
		room := watch.expectRoom(p.key(), c.name, p.workName())
		written, err := rep.makeRoom(context.WithoutCancel(ctx), c, p.waiting)
		if err != nil {
			return err
		}
		watch.written(room, written)
	}
	return nil
}

// usage reads the CPU time fleetfit-hub and the hub's API server and etcd have spent.
func usage(b *testing.B, proc *framework.Component, hub *framework.ControlPlane) (framework.Usage, framework.Usage) {
	h, err := proc.Usage()
	if err != nil {
		b.Fatal(err)
	}
	p, err := hub.Usage()
	if err != nil {
		b.Fatal(err)
	}
	return h, p
}

// hubMetric reads a metric of fleetfit-hub, summed over its labels.
func hubMetric(ctx context.Context, b *testing.B, hub *framework.ControlPlane, proc *framework.Component, name string) float64 {
	v, found, err := framework.HubMetrics(ctx, hub, proc, name)
	if err != nil || !found {
		b.Fatalf("metric %s of fleetfit-hub: found %v, %v", name, found, err)
	}
	return v
}

// formatRequests lists the non-zero counts, sorted, for the log.
func formatRequests(counts map[string]float64) string {
	keys := make([]string, 0, len(counts))
	for k, v := range counts {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%.0f", k, counts[k])
	}
	return strings.Join(parts, " ")
}
