package hub

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/fleetfit/fleetfit/pkg/controller/placement"
)

// TestMetricsGather: what /metrics serves — the hub's own registry beside component-base's —
// gathers without a duplicate family, with Go's metrics once and the work queues' by name.
func TestMetricsGather(t *testing.T) {
	reg := prometheus.NewRegistry()
	placement.NewMetrics(reg)
	q := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "metrics-test"})
	defer q.ShutDown()
	q.Add("a")
	families, err := prometheus.Gatherers{reg, legacyregistry.DefaultGatherer}.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	seen := map[string]int{}
	for _, f := range families {
		seen[f.GetName()]++
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "workqueue_adds_total", "workqueue_queue_duration_seconds"} {
		if seen[name] != 1 {
			t.Errorf("%s gathered %d times, want once", name, seen[name])
		}
	}
	if seen["fleetfit_scheduler_inventory_report_lag_seconds"] != 1 {
		t.Errorf("the hub's own histogram is missing")
	}
}
