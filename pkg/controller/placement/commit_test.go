package placement

import (
	"testing"
	"time"
)

func TestCommitOrder(t *testing.T) {
	o := newCommitOrder()
	first, second := o.begin(), o.begin()
	o.wait(first) // nothing began before it
	done := make(chan struct{})
	go func() {
		o.wait(second)
		close(done)
	}()
	select {
	case <-done:
		t.Fatal("the second cycle committed before the first ended")
	case <-time.After(50 * time.Millisecond):
	}
	o.end(first)
	o.end(first) // ending twice is harmless
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the second cycle still waits after the first ended")
	}
	o.end(second)
	if third := o.begin(); third <= second {
		t.Errorf("ticket %d after %d", third, second)
	}
}
