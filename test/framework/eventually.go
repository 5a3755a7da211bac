package framework

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Named timeouts for waiting on controllers and API server caches.
const (
	// EventuallyTimeout bounds a wait for a controller or an API server
	// cache to catch up, on a loaded 2-core machine.
	EventuallyTimeout = 60 * time.Second
	// PollInterval is how often Eventually tries again.
	PollInterval = 200 * time.Millisecond
)

// Eventually retries fn until it returns nil, failing the test with fn's
// last error when EventuallyTimeout passes.
func Eventually(t testing.TB, fn func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), PollInterval, EventuallyTimeout, true, func(ctx context.Context) (bool, error) {
		err := fn(ctx)
		if err != nil && (ctx.Err() != nil || nearDeadline(ctx)) {
			// The timeout cut this attempt short, or a client refused to start a request
			// it could not finish in time; the previous error says more.
			return false, nil
		}
		last = err
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("condition not met within %v: %v", EventuallyTimeout, last)
	}
}

// Consistently checks fn every PollInterval for d and fails the test at the first error. It
// is for asserting that something does NOT happen, once a barrier has shown that the
// controller saw the change that must not matter.
func Consistently(t testing.TB, d time.Duration, fn func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := fn(t.Context()); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			return
		}
		select {
		case <-t.Context().Done():
			return
		case <-time.After(PollInterval):
		}
	}
}

// nearDeadline reports whether ctx ends within a few poll intervals.
func nearDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && time.Until(d) < 5*PollInterval
}
