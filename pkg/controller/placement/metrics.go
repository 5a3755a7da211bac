package placement

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetfit/fleetfit/pkg/scheduler"
)

// Metrics are the placement controller's Prometheus metrics.
type Metrics struct {
	cycleDuration  prometheus.Histogram
	bindDuration   prometheus.Histogram
	pluginDuration *prometheus.HistogramVec
	cycles         *prometheus.CounterVec
	// clusterEvents counts the placements a change of what a cluster reports was checked
	// against, by the kind of object and whether it requeued them; decidedRemovals counts the
	// decided clusters that cycles took away from placements, by why they could.
	clusterEvents   *prometheus.CounterVec
	decidedRemovals *prometheus.CounterVec
	// reportLag is how long after an agent wrote a report (its observedAt) the hub handled it.
	reportLag prometheus.Histogram
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	buckets := prometheus.ExponentialBuckets(0.0001, 2, 16)
	m := &Metrics{
		cycleDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "fleetfit", Subsystem: "scheduler", Name: "cycle_duration_seconds",
			Help: "Duration of one scheduling cycle (snapshot, filters, prioritizers, selection).", Buckets: buckets,
		}),
		bindDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "fleetfit", Subsystem: "scheduler", Name: "bind_duration_seconds",
			Help: "Duration of writing a placement's decisions.", Buckets: buckets,
		}),
		pluginDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "fleetfit", Subsystem: "scheduler", Name: "plugin_duration_seconds",
			Help: "Duration of one plugin in one cycle.", Buckets: buckets,
		}, []string{"extension_point", "plugin"}),
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetfit", Subsystem: "scheduler", Name: "cycles_total",
			Help: "Scheduling cycles by result (scheduled, misconfigured, error).",
		}, []string{"result"}),
		clusterEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetfit", Subsystem: "scheduler", Name: "cluster_event_placements_total",
			Help: "Placements checked against a change of what a cluster reports (source: ClusterInventory, AddOnPlacementScore, Reservation), by whether their plugins requeued them (hint: Queue or QueueSkip).",
		}, []string{"source", "hint"}),
		decidedRemovals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetfit", Subsystem: "scheduler", Name: "decided_cluster_removals_total",
			Help: "Decided clusters that cycles took away from placements, by reason (NoLongerFeasible, PlacementChanged, Rebalance, FollowScores, FewerClusters).",
		}, []string{"reason"}),
		reportLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "fleetfit", Subsystem: "scheduler", Name: "inventory_report_lag_seconds",
			Help:    "Seconds from a ClusterInventory report's observedAt (the agent's clock) until the hub handled it: how far the hub's view of the fleet is behind.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 18),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.cycleDuration, m.bindDuration, m.pluginDuration, m.cycles, m.clusterEvents, m.decidedRemovals, m.reportLag)
	}
	return m
}

// ObservePlugin implements scheduler.Observer.
func (m *Metrics) ObservePlugin(extensionPoint, plugin string, d time.Duration) {
	m.pluginDuration.WithLabelValues(extensionPoint, plugin).Observe(d.Seconds())
}

func (m *Metrics) observeCycle(res *scheduler.Result, d time.Duration) {
	m.cycleDuration.Observe(d.Seconds())
	result := "scheduled"
	if res.Failed() {
		result = "misconfigured"
		if res.Status.Code().String() == "Error" {
			result = "error"
		}
	}
	m.cycles.WithLabelValues(result).Inc()
}

func (m *Metrics) observeClusterEvent(source string, queued, skipped int) {
	if queued > 0 {
		m.clusterEvents.WithLabelValues(source, "Queue").Add(float64(queued))
	}
	if skipped > 0 {
		m.clusterEvents.WithLabelValues(source, "QueueSkip").Add(float64(skipped))
	}
}

func (m *Metrics) observeReportLag(observedAt, now time.Time) {
	if observedAt.IsZero() {
		return
	}
	// An agent's clock may be ahead of the hub's: that is no lag.
	m.reportLag.Observe(max(now.Sub(observedAt), 0).Seconds())
}
