package workers

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

// QueueMetrics are the work queues' Prometheus metrics, by queue name, under the names
// kube-controller-manager gives them (workqueue_depth, workqueue_adds_total,
// workqueue_queue_duration_seconds, ...), prefixed with the process's namespace. They say
// how long a key waited before a worker took it, which the controllers' own metrics do not.
type QueueMetrics struct {
	depth, longestRunning, unfinished *prometheus.GaugeVec
	adds, retries                     *prometheus.CounterVec
	latency, workDuration             *prometheus.HistogramVec
}

var setProvider sync.Once

// RegisterQueueMetrics creates the metrics under namespace, registers them with reg and
// makes them the metrics of every work queue the process creates from then on (client-go
// takes one provider per process: only the first call has that effect).
func RegisterQueueMetrics(reg prometheus.Registerer, namespace string) (*QueueMetrics, error) {
	labels := []string{"name"}
	buckets := prometheus.ExponentialBuckets(0.0001, 2, 18)
	m := &QueueMetrics{
		depth: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "workqueue", Name: "depth",
			Help: "Current depth of the work queue."}, labels),
		adds: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "workqueue", Name: "adds_total",
			Help: "Keys added to the work queue."}, labels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "workqueue", Name: "queue_duration_seconds",
			Help: "How long a key waits in the work queue before a worker takes it.", Buckets: buckets}, labels),
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: "workqueue", Name: "work_duration_seconds",
			Help: "How long a worker takes with one key.", Buckets: buckets}, labels),
		unfinished: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "workqueue", Name: "unfinished_work_seconds",
			Help: "Seconds of work in progress that no worker has finished yet."}, labels),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Subsystem: "workqueue", Name: "longest_running_processor_seconds",
			Help: "Seconds the longest-running worker has been at its key."}, labels),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Subsystem: "workqueue", Name: "retries_total",
			Help: "Keys put back to be retried later."}, labels),
	}
	for _, c := range []prometheus.Collector{m.depth, m.adds, m.latency, m.workDuration, m.unfinished, m.longestRunning, m.retries} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	setProvider.Do(func() { workqueue.SetProvider(m) })
	return m, nil
}

// NewDepthMetric implements workqueue.MetricsProvider.
func (m *QueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}

// NewAddsMetric implements workqueue.MetricsProvider.
func (m *QueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name)
}

// NewLatencyMetric implements workqueue.MetricsProvider.
func (m *QueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}

// NewWorkDurationMetric implements workqueue.MetricsProvider.
func (m *QueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}

// NewUnfinishedWorkSecondsMetric implements workqueue.MetricsProvider.
func (m *QueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}

// NewLongestRunningProcessorSecondsMetric implements workqueue.MetricsProvider.
func (m *QueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunning.WithLabelValues(name)
}

// NewRetriesMetric implements workqueue.MetricsProvider.
func (m *QueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name)
}
