package workers

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
)

// MaxRetryDelay bounds how long a key that keeps failing waits before its next try. client-go's
// default controller limiter goes up to 1000 s, so after an API server outage of a few minutes a
// placement could wait a quarter of an hour more before anyone looked at it again; a minute
// keeps retries cheap and recovery prompt.
const MaxRetryDelay = time.Minute

// RateLimiter is the retry limiter of fleetfit's controllers, the hub's and the agent's: per-key
// exponential backoff from 5 ms up to MaxRetryDelay, and an overall bucket of 10 retries per
// second (burst 100), as client-go's default but with the lower cap.
func RateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, MaxRetryDelay),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}
