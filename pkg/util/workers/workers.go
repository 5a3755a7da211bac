// Package workers runs a controller's work queue: wait for the informers, seed the queue,
// then process keys with several workers until the context ends, retrying failed keys with
// the queue's rate limiter. The hub's controllers and the agent's share it so that each file
// holds only what its controller does; it sits under pkg/util so that the agent need not import
// the hub's controllers to use it.
package workers

import (
	"context"
	"sync"
	"time"

	"github.com/fleetfit/fleetfit/pkg/conflict"
	"github.com/fleetfit/fleetfit/pkg/logs"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Loop is one controller's queue and what it does with a key.
type Loop struct {
	// Name is the controller's name in logs.
	Name  string
	Queue workqueue.TypedRateLimitingInterface[string]
	// Synced are the informer registrations to wait for.
	Synced []toolscache.InformerSynced
	// Seed runs once the caches are synced, before the workers start; it usually queues every
	// object and returns how many, for the start-up log.
	Seed func() int
	// Sync handles one key. An error means a transient failure: the key is retried with
	// backoff, and logged as an error unless it is only update conflicts (see conflict.Only),
	// which are logged at logs.Changes. Terminal problems are conditions and events, and Sync
	// returns nil for them.
	Sync func(ctx context.Context, key string) error
	// Hold, when set, is asked before each sync of a key whether the key must wait: a
	// positive duration puts it back for that long without syncing it. It keeps syncs a least
	// interval apart, which the queue's rate limiter cannot do: that one delays only retries,
	// not the keys that events add. Hold runs on the workers, so with several it must be safe
	// for concurrent use.
	Hold    func(key string) time.Duration
	Workers int
	// Progress, when set, records the loop's progress for health checks.
	Progress *Progress
}

// Run runs the loop until ctx ends and shuts the queue down.
func (l Loop) Run(ctx context.Context) {
	defer utilruntime.HandleCrash()
	defer l.Queue.ShutDown()
	logger := klog.FromContext(ctx).WithName(l.Name)
	ctx = klog.NewContext(ctx, logger)
	if !toolscache.WaitForCacheSync(ctx.Done(), l.Synced...) {
		return
	}
	seeded := 0
	if l.Seed != nil {
		seeded = l.Seed()
	}
	l.Progress.start(time.Now(), l.Queue.Len)
	logger.Info("Controller started", "workers", l.Workers, "queued", seeded)
	var wg sync.WaitGroup
	for range max(l.Workers, 1) {
		wg.Go(func() { wait.UntilWithContext(ctx, l.work, time.Second) })
	}
	<-ctx.Done()
	l.Queue.ShutDown()
	wg.Wait()
}

func (l Loop) work(ctx context.Context) {
	for {
		key, quit := l.Queue.Get()
		if quit {
			return
		}
		if l.Hold != nil {
			if wait := l.Hold(key); wait > 0 {
				l.Queue.AddAfter(key, wait)
				l.Queue.Done(key)
				continue
			}
		}
		l.Progress.begin()
		err := l.Sync(ctx, key)
		l.Progress.done(time.Now())
		switch {
		case err != nil && conflict.Only(err):
			// Another writer got there first: the next try reads its write. Nothing to see.
			klog.FromContext(ctx).V(logs.Changes).Info("Conflict writing, requeued", "key", key, "err", err, "retries", l.Queue.NumRequeues(key))
			l.Queue.AddRateLimited(key)
		case err != nil:
			utilruntime.HandleErrorWithContext(ctx, err, "Sync failed", "controller", l.Name, "key", key, "retries", l.Queue.NumRequeues(key))
			l.Queue.AddRateLimited(key)
		default:
			l.Queue.Forget(key)
		}
		l.Queue.Done(key)
	}
}
