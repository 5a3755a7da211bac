package eventlimit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
)

func TestNormalEventsAreBoundedWarningsNot(t *testing.T) {
	for name, tc := range map[string]struct {
		qps                     float32
		burst                   int
		wantNormal, wantDropped int
	}{
		// The bucket refills 1e-6 tokens per second: nothing comes back during the test.
		"limited":  {qps: 1e-6, burst: 3, wantNormal: 3, wantDropped: 7},
		"no limit": {qps: 0, burst: 3, wantNormal: 10},
	} {
		t.Run(name, func(t *testing.T) {
			fake := events.NewFakeRecorder(100)
			reg := prometheus.NewRegistry()
			r, err := New(fake, tc.qps, tc.burst, reg)
			if err != nil {
				t.Fatal(err)
			}
			for range 10 {
				r.Eventf(nil, nil, corev1.EventTypeNormal, "DecisionCreate", "DecisionCreated", "created")
				r.Eventf(nil, nil, corev1.EventTypeWarning, "Misconfigured", "Schedule", "broken")
			}
			close(fake.Events)
			got := map[string]int{}
			for ev := range fake.Events {
				got[ev]++
			}
			if got["Normal DecisionCreate created"] != tc.wantNormal || got["Warning Misconfigured broken"] != 10 {
				t.Errorf("recorded %v, want %d Normal and all 10 Warning events", got, tc.wantNormal)
			}
			if n, err := testutil.GatherAndCount(reg, "fleetfit_events_dropped_total"); err != nil || (tc.wantDropped > 0) != (n > 0) {
				t.Errorf("registry holds %d dropped series (%v)", n, err)
			}
			if n := testutil.ToFloat64(r.dropped.WithLabelValues("DecisionCreate")); int(n) != tc.wantDropped {
				t.Errorf("%v dropped, want %d", n, tc.wantDropped)
			}
		})
	}
}
