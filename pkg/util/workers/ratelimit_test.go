package workers

import (
	"testing"
)

func TestRetryDelayIsCapped(t *testing.T) {
	rl := RateLimiter()
	var last = rl.When("key")
	for range 40 {
		last = rl.When("key")
	}
	if last != MaxRetryDelay {
		t.Errorf("after 40 failures the delay is %s, want the cap %s", last, MaxRetryDelay)
	}
	rl.Forget("key")
	if d := rl.When("key"); d >= MaxRetryDelay {
		t.Errorf("after Forget the delay is %s, want it to start over", d)
	}
}
