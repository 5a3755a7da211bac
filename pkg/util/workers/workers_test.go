package workers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

// TestHoldDelaysSync checks, with a fake clock, that a key Hold asks to wait is put back
// unsynced and synced once the wait has passed.
func TestHoldDelaysSync(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	due := clock.Now().Add(5 * time.Second)
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(RateLimiter(),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "test", Clock: clock})
	var held, synced atomic.Int32
	loop := Loop{
		Name:  "test",
		Queue: queue,
		Seed:  func() int { queue.Add("key"); return 1 },
		Hold: func(string) time.Duration {
			held.Add(1)
			return due.Sub(clock.Now())
		},
		Sync: func(context.Context, string) error {
			synced.Add(1)
			return nil
		},
		Workers: 1,
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	done := make(chan struct{})
	go func() {
		loop.Run(ctx)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	poll(t, "the key to be held", func() bool { return held.Load() == 1 && clock.HasWaiters() })
	if got := synced.Load(); got != 0 {
		t.Fatalf("syncs while held: %d, want 0", got)
	}
	clock.Step(5 * time.Second)
	poll(t, "the held key to be synced", func() bool { return synced.Load() == 1 })
	if got := held.Load(); got != 2 {
		t.Errorf("Hold asked %d times, want 2 (held, then let through)", got)
	}
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
