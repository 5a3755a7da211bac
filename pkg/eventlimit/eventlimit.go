// Package eventlimit bounds how fast a recorder writes informational events. An event is a
// write to the API server that costs it about as much as a PlacementDecision does, so a
// backlog of new placements recording one event each would take a large share of what the
// API server can write from the decisions themselves. Kubernetes events are best effort: as
// kubelet does with its --event-qps, Normal events beyond the rate are dropped (and counted);
// Warning events, which tell users what to fix, are always recorded.
package eventlimit

import (
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
)

// Recorder passes events to another recorder, Normal ones at a bounded rate.
type Recorder struct {
	next    events.EventRecorder
	limiter flowcontrol.RateLimiter // nil: no limit
	dropped *prometheus.CounterVec
}

var _ events.EventRecorder = (*Recorder)(nil)

// New returns a recorder that passes at most qps Normal events per second (with bursts of
// burst) to next; qps 0 or less sets no limit. Dropped events are counted in
// fleetfit_events_dropped_total, by reason, registered with reg when it is not nil.
func New(next events.EventRecorder, qps float32, burst int, reg prometheus.Registerer) (*Recorder, error) {
	r := &Recorder{
		next: next,
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "fleetfit", Name: "events_dropped_total",
			Help: "Normal events not recorded because they came faster than --event-qps, by reason.",
		}, []string{"reason"}),
	}
	if qps > 0 {
		r.limiter = flowcontrol.NewTokenBucketRateLimiter(qps, max(burst, 1))
	}
	if reg != nil {
		if err := reg.Register(r.dropped); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Eventf records the event, unless it is a Normal one beyond the rate.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if eventtype != corev1.EventTypeWarning && r.limiter != nil && !r.limiter.TryAccept() {
		r.dropped.WithLabelValues(reason).Inc()
		return
	}
	r.next.Eventf(regarding, related, eventtype, reason, action, note, args...)
}
