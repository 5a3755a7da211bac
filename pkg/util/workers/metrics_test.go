package workers

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/util/workqueue"
)

// TestQueueMetrics: a queue created after the metrics are registered counts its adds and its
// depth under its name, and how long its keys waited.
func TestQueueMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := RegisterQueueMetrics(reg, "test")
	if err != nil {
		t.Fatal(err)
	}
	q := workqueue.NewTypedRateLimitingQueueWithConfig(RateLimiter(), workqueue.TypedRateLimitingQueueConfig[string]{Name: "things"})
	defer q.ShutDown()
	q.Add("a")
	q.Add("b")
	q.Add("a") // already queued: not added twice
	if got := testutil.ToFloat64(m.adds.WithLabelValues("things")); got != 2 {
		t.Errorf("adds = %v, want 2", got)
	}
	if got := testutil.ToFloat64(m.depth.WithLabelValues("things")); got != 2 {
		t.Errorf("depth = %v, want 2", got)
	}
	key, _ := q.Get()
	q.Done(key)
	if got := testutil.ToFloat64(m.depth.WithLabelValues("things")); got != 1 {
		t.Errorf("depth after one Get = %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg, "test_workqueue_queue_duration_seconds"); err != nil || n != 1 {
		t.Errorf("queue_duration_seconds series = %d, %v; want 1", n, err)
	}
	// A second registry cannot take the same names twice; the provider stays the first.
	if _, err := RegisterQueueMetrics(reg, "test"); err == nil {
		t.Error("registering twice with one registry succeeded")
	}
}
