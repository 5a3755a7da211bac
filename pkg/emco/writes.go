package emco

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Every change of an intent is a read-modify-write of one HPAIntent, made on
// condition that nobody wrote it meanwhile. Two things let concurrent
// requests all land:
//
//   - this hub makes its own changes of one intent one at a time (intentLocks),
//     so they never lose a race to each other and no write is wasted;
//   - a change that still loses one — to another replica, kubectl, or the
//     hub's controllers writing the intent's status — reads the intent again
//     and is applied anew, for as long as conflictTimeout allows, not for a
//     fixed number of attempts.
//
// A 409 therefore only ever means what EMCO's clients take it to mean: the
// name exists, or the parent has children.

// conflictBackoff paces the retries of a change that lost a race; Steps is
// unbounded because conflictTimeout bounds them.
var conflictBackoff = wait.Backoff{Steps: math.MaxInt32, Duration: 5 * time.Millisecond, Factor: 1.5, Jitter: 1, Cap: 200 * time.Millisecond}

// conflictTimeout bounds how long one request keeps retrying a change that
// loses every race. Past it the request is a 503: nothing was written, and
// the client may send it again.
const conflictTimeout = 30 * time.Second

// intentLocks serialises this hub's changes of each intent, by
// namespace/name. Waiting for one ends with the request's context.
type intentLocks struct {
	mu   sync.Mutex
	held map[string]*intentLock
}

type intentLock struct {
	token chan struct{}
	// users counts the requests holding or waiting for the lock; the entry
	// is removed when the last one is done.
	users int
}

// lock waits for key's lock and returns its release, or the context's error.
func (l *intentLocks) lock(ctx context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.held == nil {
		l.held = map[string]*intentLock{}
	}
	e := l.held[key]
	if e == nil {
		e = &intentLock{token: make(chan struct{}, 1)}
		l.held[key] = e
	}
	e.users++
	l.mu.Unlock()
	done := func() {
		l.mu.Lock()
		e.users--
		if e.users == 0 {
			delete(l.held, key)
		}
		l.mu.Unlock()
	}
	select {
	case e.token <- struct{}{}:
		return func() { <-e.token; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// write runs attempt, which reads the scope's intent and writes it
// conditionally, under the intent's lock, again after every conflict until
// it lands or h.conflictTimeout passes. Errors other than a conflict end it.
func (h *Handler) write(ctx context.Context, s scope, attempt func() error) error {
	unlock, err := h.locks.lock(ctx, s.project+"/"+s.intent)
	if err != nil {
		return fmt.Errorf("waiting for the other changes of hpa intent %q: %w", s.intent, err)
	}
	defer unlock()
	start := time.Now()
	deadline := start.Add(h.conflictTimeout)
	err = retry.OnError(h.backoff, func(err error) bool {
		return apierrors.IsConflict(err) && ctx.Err() == nil && time.Now().Before(deadline)
	}, attempt)
	if apierrors.IsConflict(err) {
		return errorf(http.StatusServiceUnavailable, "hpa intent %q kept changing for %s while this request was applied: nothing was written; send it again",
			s.intent, time.Since(start).Round(time.Millisecond))
	}
	return err
}
