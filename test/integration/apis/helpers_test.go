package apis

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// eventuallyTimeout bounds waits for the API server's caches to catch up.
const eventuallyTimeout = 30 * time.Second

// eventually retries fn until it returns nil, failing the test with fn's
// last error when the timeout passes.
func eventually(t *testing.T, fn func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, eventuallyTimeout, true, func(context.Context) (bool, error) {
		last = fn()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("condition not met within %v: %v", eventuallyTimeout, last)
	}
}
