// Package placement measures, end to end on a real hub API server, how long fleetfit-hub and
// OCM's own placement controller (built from open-cluster-management.io/ocm by `make tools`)
// take to satisfy the same Placements over the same fleet. Run it with `make bench-e2e`.
//
// Each scheduler gets a fresh hub with the same objects: FLEETFIT_BENCH_CLUSTERS managed
// clusters (default 2,000; labels, claims, 5% tainted NoSelect) in one cluster set bound to
// ten namespaces, and FLEETFIT_BENCH_PLACEMENTS Placements (default 1,000; a label predicate,
// numberOfClusters 1..10, some tolerating the taint). The clock starts when the scheduler
// starts and stops when every Placement has PlacementSatisfied=True. Both schedulers talk to
// the API server at the same client rate, FLEETFIT_BENCH_QPS (default 50 — both their
// defaults — with a burst of twice that); at 50 both are mostly waiting for their rate
// limiter, so a higher rate shows the schedulers' own cost.
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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/manifests"
	hubcmd "github.com/fleetfit/fleetfit/pkg/cmd/hub"
	"github.com/fleetfit/fleetfit/pkg/install"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) {
	// Both schedulers list their caches the classic way: OCM's client-go (v0.34) does not
	// stream lists, and fleetfit's (v0.35) would, which on a fresh API server waits about a
	// second for the first bookmark and would time that wait instead of scheduling.
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

// BenchmarkPlacementEndToEnd reports seconds until every Placement is satisfied, for
// fleetfit and for OCM, and the ratio.
func BenchmarkPlacementEndToEnd(b *testing.B) {
	clusters := envInt("FLEETFIT_BENCH_CLUSTERS", 2000)
	placements := envInt("FLEETFIT_BENCH_PLACEMENTS", 1000)
	qps := envInt("FLEETFIT_BENCH_QPS", 50)
	results := map[string]float64{}
	for _, sched := range []string{"fleetfit", "ocm"} {
		b.Run(sched, func(b *testing.B) {
			var total time.Duration
			for range b.N {
				total += runOnce(b, sched, clusters, placements, qps)
			}
			secs := total.Seconds() / float64(b.N)
			results[sched] = secs
			b.ReportMetric(secs, "s-to-satisfy")
			b.ReportMetric(0, "ns/op")
		})
	}
	if results["fleetfit"] > 0 && results["ocm"] > 0 {
		b.Logf("%d clusters, %d placements, %d QPS: fleetfit %.2fs, OCM %.2fs, OCM/fleetfit = %.1fx",
			clusters, placements, qps, results["fleetfit"], results["ocm"], results["ocm"]/results["fleetfit"])
	}
}

func runOnce(b *testing.B, sched string, clusters, placements, qps int) time.Duration {
	b.StopTimer()
	ctx := context.Background()
	hub, err := framework.StartControlPlane(ctx, "bench-"+sched, framework.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer hub.Stop()
	crds, err := manifests.HubCRDs()
	if err != nil {
		b.Fatal(err)
	}
	if err := install.ApplyCRDs(ctx, hub.AdminConfig(), crds); err != nil {
		b.Fatal(err)
	}
	cfg := hub.AdminConfig()
	cfg.QPS, cfg.Burst = 2000, 4000
	if err := populate(ctx, cfg, clusters, placements); err != nil {
		b.Fatal(err)
	}
	client := clusterclient.NewForConfigOrDie(cfg)

	b.StartTimer()
	start := time.Now()
	stop, err := startScheduler(ctx, b, sched, hub, qps)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	for {
		list, err := client.ClusterV1beta1().Placements("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			b.Fatal(err)
		}
		satisfied := 0
		for i := range list.Items {
			if meta.IsStatusConditionTrue(list.Items[i].Status.Conditions, clusterv1beta1.PlacementConditionSatisfied) {
				satisfied++
			}
		}
		if satisfied == placements {
			break
		}
		if time.Since(start) > 15*time.Minute {
			b.Fatalf("%s: only %d of %d placements satisfied after 15 minutes", sched, satisfied, placements)
		}
		time.Sleep(100 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.Logf("%s: writes to the hub by resource: %v", sched, writes(ctx, b, hub))
	return elapsed
}

// writes returns the API server's count of successful writes per resource (from its
// apiserver_request_total metric), skipping what populate wrote.
func writes(ctx context.Context, b *testing.B, hub *framework.ControlPlane) map[string]int {
	raw, err := hub.AdminClient().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") {
			continue
		}
		labels, value, _ := strings.Cut(line, "} ")
		get := func(k string) string {
			_, rest, ok := strings.Cut(labels, k+"=\"")
			if !ok {
				return ""
			}
			v, _, _ := strings.Cut(rest, "\"")
			return v
		}
		verb, res, sub := get("verb"), get("resource"), get("subresource")
		if verb != "PATCH" && verb != "PUT" && verb != "DELETE" && verb != "POST" && verb != "APPLY" {
			continue
		}
		if res == "managedclusters" || res == "namespaces" || res == "managedclustersets" || res == "managedclustersetbindings" ||
			res == "customresourcedefinitions" || (res == "placements" && sub == "") || res == "subjectaccessreviews" || res == "tokenreviews" {
			continue
		}
		n, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
		key := verb + " " + res
		if sub != "" {
			key += "/" + sub
		}
		out[key] += int(n)
	}
	return out
}

// startScheduler starts fleetfit-hub in-process, or OCM's placement controller as a process,
// each with the same client rate limits.
func startScheduler(ctx context.Context, b *testing.B, sched string, hub *framework.ControlPlane, qps int) (func(), error) {
	if sched == "ocm" {
		p, err := framework.StartOCMPlacement(ctx, hub, fmt.Sprintf("--kube-api-qps=%d", qps), fmt.Sprintf("--kube-api-burst=%d", 2*qps))
		if err != nil {
			return nil, err
		}
		return p.Stop, nil
	}
	kc, err := framework.Kubeconfig(hub.AdminConfig(), "hub")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(b.TempDir(), "hub.kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return nil, err
	}
	o := hubcmd.NewOptions()
	o.Kubeconfig, o.LeaderElect = path, false
	o.QPS, o.Burst = float32(qps), 2*qps
	o.Serving.SecureServing.BindPort = 0
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(runCtx) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("fleetfit-hub: %v", err)
		}
	}, nil
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
