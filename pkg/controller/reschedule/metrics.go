package reschedule

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the controller's Prometheus metrics.
type Metrics struct {
	// moves counts the moves written, by reason; refused the moves not made although pods
	// waited past their threshold, by reason, once per refusal (not per look).
	moves   *prometheus.CounterVec
	refused *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		moves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetfit", Subsystem: "reschedule", Name: "moves_total",
			Help: "Moves of an HPAIntent's workload away from a decided cluster, by reason (Unschedulable: its pods stayed unschedulable there past spec.rescheduling.unschedulableFor).",
		}, []string{"reason"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetfit", Subsystem: "reschedule", Name: "refused_moves_total",
			Help: "Workloads whose pods stayed unschedulable past their threshold and that did not move, by reason (NoReplacement, MoveLimit, Never).",
		}, []string{"reason"}),
	}
	if reg != nil {
		reg.MustRegister(m.moves, m.refused)
	}
	return m
}
