// Package placement measures, end to end on a real hub API server, how fast fleetfit-hub and
// OCM's own placement controller (built from open-cluster-management.io/ocm by `make tools`)
// satisfy the same Placements over the same fleet, against the API server's write floor: a
// client that does nothing but the writes fleetfit does for each placement (create its
// PlacementDecision, write the decision list, write the Placement's status), with fleetfit's
// concurrency and client rate. Run it with `make bench-e2e`.
//
// Each run gets a fresh hub with the same objects: managed clusters (labels, 5% tainted
// NoSelect) in one cluster set bound to ten namespaces, and Placements (a label predicate,
// numberOfClusters 1..10, some tolerating the taint), all created before the scheduler starts
// (a backlog). The clock starts when the scheduler starts and stops when every Placement has
// PlacementSatisfied=True. Sizes: 2,000 clusters × 1,000 placements, and with
// FLEETFIT_BENCH_LARGE=1 also 10,000 × 5,000; or one size of FLEETFIT_BENCH_CLUSTERS ×
// FLEETFIT_BENCH_PLACEMENTS.
//
// fleetfit-hub runs as a process with its default flags (plus FLEETFIT_BENCH_HUB_ARGS, split on
// spaces, for experiments); OCM's controller with --kube-api-qps FLEETFIT_BENCH_OCM_QPS (default
// 1,000, burst twice that), since at its default of 50 it mostly waits for its rate limiter.
// FLEETFIT_BENCH_SCHEDULERS (default "fleetfit,ocm,floor") picks which run. With
// FLEETFIT_BENCH_PROFILE=<dir>, fleetfit-hub's CPU profile of the first
// FLEETFIT_BENCH_PROFILE_SECONDS (default 5) and its heap at the end are written there, read
// from its --profiling endpoint.
package placement

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) {
	// Every client here lists the classic way: OCM's client-go (v0.34) does not stream
	// lists, and fleetfit's (v0.35) would, which on a fresh API server waits about a second
	// for the first bookmark and would time that wait instead of scheduling. The variable is
	// inherited by the fleetfit-hub process.
	os.Setenv("KUBE_FEATURE_WatchListClient", "false")
	framework.Main(m)
}

const namespaces = 10

var regions = []string{"us-east", "us-west", "eu-central", "eu-west", "ap-south"}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

type size struct{ clusters, placements int }

func (s size) String() string { return fmt.Sprintf("%dx%d", s.clusters, s.placements) }

func sizes() []size {
	if os.Getenv("FLEETFIT_BENCH_CLUSTERS") != "" || os.Getenv("FLEETFIT_BENCH_PLACEMENTS") != "" {
		return []size{{envInt("FLEETFIT_BENCH_CLUSTERS", 2000), envInt("FLEETFIT_BENCH_PLACEMENTS", 1000)}}
	}
	out := []size{{2000, 1000}}
	if os.Getenv("FLEETFIT_BENCH_LARGE") != "" {
		out = append(out, size{10000, 5000})
	}
	return out
}

// result is one scheduler's run.
type result struct {
	elapsed, firstDecision time.Duration
	usage                  *framework.Usage // nil for the floor, which runs in the test
	// hubCPU is the CPU time the hub's kube-apiserver and etcd spent during the run.
	hubCPU time.Duration
	// cycles and cycleTime are fleetfit-hub's scheduling cycles and the time they took.
	cycles    float64
	cycleTime time.Duration
}

func (r result) rate(s size) float64 { return float64(s.placements) / r.elapsed.Seconds() }

// BenchmarkPlacementEndToEnd reports, per size and scheduler, placements satisfied per second,
// seconds to the first decision, the CPU seconds the hub's kube-apiserver and etcd spent and,
// for the schedulers' processes, their peak RSS and CPU seconds; then each rate and
// fleetfit's share of the floor.
func BenchmarkPlacementEndToEnd(b *testing.B) {
	scheds := strings.Split(os.Getenv("FLEETFIT_BENCH_SCHEDULERS"), ",")
	if scheds[0] == "" {
		scheds = []string{"fleetfit", "ocm", "floor"}
	}
	for _, sz := range sizes() {
		rates := map[string]float64{}
		for _, sched := range scheds {
			b.Run(sz.String()+"/"+sched, func(b *testing.B) {
				var total time.Duration
				var last result
				for range b.N {
					last = runOnce(b, sched, sz)
					total += last.elapsed
				}
				rates[sched] = float64(sz.placements*b.N) / total.Seconds()
				b.ReportMetric(rates[sched], "placements/s")
				b.ReportMetric(last.firstDecision.Seconds(), "s-to-first-decision")
				b.ReportMetric(last.hubCPU.Seconds(), "apiserver+etcd-cpu-s")
				if last.cycles > 0 {
					// More than one cycle per placement would mean the hub's own writes, or
					// conflicts, made it schedule again.
					b.ReportMetric(last.cycles/float64(sz.placements), "cycles/placement")
					b.ReportMetric(last.cycleTime.Seconds()*1000/last.cycles, "ms/cycle")
				}
				if last.usage != nil {
					b.ReportMetric(float64(last.usage.PeakRSS)/(1<<20), "peak-RSS-MiB")
					b.ReportMetric(last.usage.CPU.Seconds(), "cpu-s")
				}
				b.ReportMetric(0, "ns/op")
			})
		}
		line := fmt.Sprintf("%s: placements/s", sz)
		for _, sched := range scheds {
			line += fmt.Sprintf(" %s %.1f", sched, rates[sched])
		}
		if rates["floor"] > 0 && rates["fleetfit"] > 0 {
			line += fmt.Sprintf("; fleetfit at %.0f%% of the floor", 100*rates["fleetfit"]/rates["floor"])
		}
		if rates["ocm"] > 0 && rates["fleetfit"] > 0 {
			line += fmt.Sprintf(", %.1fx OCM", rates["fleetfit"]/rates["ocm"])
		}
		b.Log(line)
	}
}

func runOnce(b *testing.B, sched string, sz size) result {
	b.StopTimer()
	ctx := context.Background()
	hub, err := framework.StartHubPlane(ctx, "bench-"+sched)
	if err != nil {
		b.Fatal(err)
	}
	defer hub.Stop()
	cfg := hub.AdminConfig()
	cfg.QPS, cfg.Burst = 2000, 4000
	if err := populate(ctx, cfg, sz.clusters, sz.placements); err != nil {
		b.Fatal(err)
	}
	watch, err := watchSatisfied(ctx, cfg, sz.placements)
	if err != nil {
		b.Fatal(err)
	}
	defer watch.stop()

	hubBefore, err := hub.Usage()
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	start := time.Now()
	var proc *framework.Component
	var profiled <-chan struct{}
	switch sched {
	case "fleetfit":
		proc, profiled = startFleetfit(ctx, b, hub, sz)
	case "ocm":
		qps := envInt("FLEETFIT_BENCH_OCM_QPS", 1000)
		if proc, err = framework.StartOCMPlacement(ctx, hub, fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", 2*qps)); err != nil {
			b.Fatal(err)
		}
	case "floor":
		go writeFloor(ctx, b, hub.AdminConfig(), watch, sz)
	default:
		b.Fatalf("unknown scheduler %q", sched)
	}
	select {
	case <-watch.done:
	case <-time.After(30 * time.Minute):
		b.Fatalf("%s: only %d of %d placements satisfied after 30 minutes", sched, watch.count(), sz.placements)
	}
	b.StopTimer()
	hubAfter, err := hub.Usage()
	if err != nil {
		b.Fatal(err)
	}
	r := result{elapsed: watch.last.Sub(start), firstDecision: watch.first.Sub(start), hubCPU: hubAfter.CPU - hubBefore.CPU}
	if proc != nil {
		u, err := proc.Usage()
		if err != nil {
			b.Fatal(err)
		}
		r.usage = &u
		if sched == "fleetfit" {
			r.cycles = hubMetric(ctx, b, hub, proc, "fleetfit_scheduler_cycles_total")
			r.cycleTime = time.Duration(hubMetric(ctx, b, hub, proc, "fleetfit_scheduler_cycle_duration_seconds_sum") * float64(time.Second))
			saveProfile(ctx, b, hub, proc, sz, "heap", "/debug/pprof/heap")
			<-profiled
		}
		proc.Stop()
	}
	b.Logf("%s %s: %.1fs, first decision after %.2fs; requests to the hub: %v", sz, sched, r.elapsed.Seconds(), r.firstDecision.Seconds(), requests(ctx, b, hub))
	return r
}

// startFleetfit runs fleetfit-hub with its default flags, and starts its CPU profile when
// asked to; the channel is closed once the profile is written (at once when not asked).
func startFleetfit(ctx context.Context, b *testing.B, hub *framework.ControlPlane, sz size) (*framework.Component, <-chan struct{}) {
	proc, err := framework.StartHubProcess(ctx, hub, hubArgs()...)
	if err != nil {
		b.Fatal(err)
	}
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		saveProfile(ctx, b, hub, proc, sz, "cpu", fmt.Sprintf("/debug/pprof/profile?seconds=%d", envInt("FLEETFIT_BENCH_PROFILE_SECONDS", 5)))
	}()
	return proc, profiled
}

// hubMetric reads a metric of fleetfit-hub, summed over its labels.
func hubMetric(ctx context.Context, b *testing.B, hub *framework.ControlPlane, proc *framework.Component, name string) float64 {
	v, found, err := framework.HubMetrics(ctx, hub, proc, name)
	if err != nil || !found {
		b.Fatalf("metric %s of fleetfit-hub: found %v, %v", name, found, err)
	}
	return v
}

// hubArgs are the flags fleetfit-hub runs with besides its defaults.
func hubArgs() []string { return strings.Fields(os.Getenv("FLEETFIT_BENCH_HUB_ARGS")) }

// saveProfile writes a profile read from fleetfit-hub's pprof endpoint into
// $FLEETFIT_BENCH_PROFILE, when set.
func saveProfile(ctx context.Context, b *testing.B, hub *framework.ControlPlane, proc *framework.Component, sz size, kind, path string) {
	dir := os.Getenv("FLEETFIT_BENCH_PROFILE")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	file := filepath.Join(dir, fmt.Sprintf("fleetfit-%s-%s.pprof", sz, kind))
	if err := framework.SaveHubProfile(ctx, hub, proc, path, file); err != nil {
		b.Logf("profile %s: %v", kind, err)
	}
}

// requests returns the API server's count of requests per verb and resource (from its
// apiserver_request_total metric), skipping what populate wrote and the API server's own
// bootstrap objects.
func requests(ctx context.Context, b *testing.B, hub *framework.ControlPlane) map[string]int {
	all, err := framework.APIRequests(ctx, hub)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for key, n := range all {
		verb, resource, _ := strings.Cut(key, " ")
		res, sub, _ := strings.Cut(resource, "/")
		switch res {
		case "managedclusters", "namespaces", "managedclustersets", "managedclustersetbindings", "customresourcedefinitions",
			"subjectaccessreviews", "tokenreviews", "apiservices", "clusterrolebindings", "clusterroles", "roles", "rolebindings",
			"flowschemas", "prioritylevelconfigurations", "priorityclasses", "servicecidrs", "ipaddresses", "services", "endpoints",
			"endpointslices", "configmaps", "leases", "":
			continue
		}
		if res == "placements" && sub == "" && verb == "POST" {
			continue
		}
		out[key] += int(n)
	}
	return out
}

// populate creates the fleet and the placements with a pool of writers.
func populate(ctx context.Context, cfg *rest.Config, clusters, placements int) error {
	client := clusterclient.NewForConfigOrDie(cfg)
	kube := kubernetes.NewForConfigOrDie(cfg)
	if _, err := client.ClusterV1beta2().ManagedClusterSets().Create(ctx, utiltesting.MakeExclusiveClusterSet("bench"), metav1.CreateOptions{}); err != nil {
		return err
	}
	for n := range namespaces {
		ns := fmt.Sprintf("bench-%d", n)
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if _, err := client.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, utiltesting.MakeClusterSetBinding(ns, "bench"), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	jobs := make(chan func() error)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for job := range jobs {
				if err := job(); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range clusters {
		jobs <- func() error {
			w := utiltesting.MakeCluster(fmt.Sprintf("cluster-%05d", i)).ClusterSet("bench").
				Label("region", regions[i%len(regions)]).Label("env", []string{"prod", "dev"}[i%2])
			if i%20 == 0 {
				w.Taint("maintenance", "true", clusterv1.TaintEffectNoSelect, time.Now())
			}
			_, err := client.ClusterV1().ManagedClusters().Create(ctx, w.Obj(), metav1.CreateOptions{})
			return err
		}
	}
	for i := range placements {
		jobs <- func() error {
			ns := fmt.Sprintf("bench-%d", i%namespaces)
			w := utiltesting.MakePlacement(fmt.Sprintf("p-%04d", i), ns).NumberOfClusters(int32(1 + i%10)).
				PredicateLabels(map[string]string{"region": regions[i%len(regions)]})
			if i%4 == 0 {
				w.Toleration(clusterv1beta1.Toleration{Key: "maintenance", Operator: clusterv1beta1.TolerationOpExists})
			}
			_, err := client.ClusterV1beta1().Placements(ns).Create(ctx, w.Obj(), metav1.CreateOptions{})
			return err
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
