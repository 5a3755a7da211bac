package ui

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/fleetfit/fleetfit/pkg/simulate"
)

// Loader reads the fleet from the hub: only the kinds named (simulate.Kind...), or everything
// the hub's scheduler reads when none are. simulate.FromHub with the user's configuration is
// the one fleetfit ui uses; tests give fleets of their own.
type Loader func(ctx context.Context, kinds ...string) (*simulate.Fleet, error)

// view is what one kind of page reads from the hub.
type view struct {
	name  string
	kinds []string
}

var (
	clustersView   = view{"clusters", []string{simulate.KindManagedClusters, simulate.KindClusterInventories}}
	placementsView = view{"placements", []string{simulate.KindPlacements, simulate.KindDecisions, simulate.KindIntents}}
	// wholeView is all the scheduler reads, for explain and what-if.
	wholeView = view{"whole", nil}
)

// snapshot is one read of the hub, shared read-only by every request until it is older than
// the cache's maxAge. derived holds what was computed from it once (the cluster summaries),
// built on first use.
type snapshot struct {
	fleet  *simulate.Fleet
	readAt time.Time

	once    sync.Once
	derived any

	// explained memoizes explanations by "namespace/name": a page explaining a placement asks
	// again every few seconds, and the answer only changes with the snapshot.
	explained sync.Map
}

// derive returns what build computes from the snapshot, computing it on the first call only.
func (s *snapshot) derive(build func(*snapshot) any) any {
	s.once.Do(func() { s.derived = build(s) })
	return s.derived
}

// snapshots caches the last read of each view. A read that fails is not kept: the next request
// asks the hub again, so that a refusal or an outage shows as soon as it happens, and ends as
// soon as it ends.
type snapshots struct {
	load   Loader
	now    func() time.Time
	maxAge time.Duration

	group singleflight.Group
	mu    sync.Mutex
	last  map[string]*snapshot
}

func newSnapshots(load Loader, now func() time.Time, maxAge time.Duration) *snapshots {
	return &snapshots{load: load, now: now, maxAge: maxAge, last: map[string]*snapshot{}}
}

// get returns the view's last snapshot while it is younger than maxAge, else reads a new one;
// concurrent callers share one read. The read is not bound to any one caller's request, so
// that a caller going away does not fail the others: it has its own timeout.
func (c *snapshots) get(ctx context.Context, v view) (*snapshot, error) {
	c.mu.Lock()
	s := c.last[v.name]
	c.mu.Unlock()
	if s != nil && c.now().Sub(s.readAt) < c.maxAge {
		return s, nil
	}
	ch := c.group.DoChan(v.name, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		readAt := c.now()
		f, err := c.load(ctx, v.kinds...)
		if err != nil {
			return nil, err
		}
		s := &snapshot{fleet: f, readAt: readAt}
		c.mu.Lock()
		c.last[v.name] = s
		c.mu.Unlock()
		return s, nil
	})
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*snapshot), nil
	}
}

// readTimeout bounds one read of the hub.
const readTimeout = time.Minute
