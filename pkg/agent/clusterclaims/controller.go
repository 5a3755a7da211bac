package clusterclaims

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/fleetfit/fleetfit/pkg/apiserved"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	clusterlisters "open-cluster-management.io/api/client/cluster/listers/cluster/v1alpha1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
	"github.com/fleetfit/fleetfit/pkg/util/workers"
)

// DefaultMinInterval is the least time between two updates of the claims.
const DefaultMinInterval = 30 * time.Second

// maxBackoff bounds the wait between retries while the API server fails.
const maxBackoff = 5 * time.Minute

// syncKey is the queue's only key: every event asks for the same sync.
const syncKey = "claims"

// Options tune the controller; zero values take the defaults.
type Options struct {
	// MinInterval is the least time between two updates of the claims; the
	// changes in between are written together.
	MinInterval time.Duration
	// MaxClaims bounds the number of claims, fixed ones included, within
	// [MinClaims, MaxClaims]; DefaultClaims by default.
	MaxClaims int
	// Clock is injected for tests.
	Clock clock.WithTicker
}

// Controller keeps the claims of the latest report on the managed cluster.
// Feed it reports with Observe, and run it with Run.
type Controller struct {
	client clusterclient.Interface
	opts   Options
	queue  workqueue.TypedRateLimitingInterface[string]

	factory clusterinformers.SharedInformerFactory
	lister  clusterlisters.ClusterClaimLister
	synced  cache.InformerSynced

	mu sync.Mutex
	// desired are the claims of the latest report; nil until the first.
	desired []Claim
	// nextWrite is when the claims may next be written.
	nextWrite time.Time
}

// New returns a controller writing claims with client, the managed cluster's.
func New(client clusterclient.Interface, opts Options) (*Controller, error) {
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultMinInterval
	}
	if opts.MaxClaims == 0 {
		opts.MaxClaims = DefaultClaims
	}
	if opts.MaxClaims < MinClaims || opts.MaxClaims > MaxClaims {
		return nil, fmt.Errorf("the number of cluster claims must be within [%d, %d], got %d", MinClaims, MaxClaims, opts.MaxClaims)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	c := &Controller{
		client: client,
		opts:   opts,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](opts.MinInterval, maxBackoff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "fleetfit-clusterclaims", Clock: opts.Clock},
		),
		// Only the agent's own claims are followed: others' are none of its business.
		factory: clusterinformers.NewSharedInformerFactoryWithOptions(client, 0,
			clusterinformers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.LabelSelector = labels.SelectorFromSet(labels.Set{ManagedByLabel: ManagedBy}).String()
			})),
	}
	claims := c.factory.Cluster().V1alpha1().ClusterClaims()
	// A claim of the agent's that someone edited or deleted is written back.
	if _, err := claims.Informer().AddEventHandler(handler.Funcs[*clusterv1alpha1.ClusterClaim]{
		Add:    func(*clusterv1alpha1.ClusterClaim) { c.enqueue() },
		Update: func(_, _ *clusterv1alpha1.ClusterClaim) { c.enqueue() },
		Delete: func(*clusterv1alpha1.ClusterClaim) { c.enqueue() },
	}); err != nil {
		return nil, fmt.Errorf("adding cluster claim handler: %w", err)
	}
	c.lister, c.synced = claims.Lister(), claims.Informer().HasSynced
	return c, nil
}

// Observe takes a new report of the cluster; its claims are written within
// MinInterval of the last write when they differ from those on the cluster.
func (c *Controller) Observe(st *v1alpha1.ClusterInventoryStatus) {
	desired := Desired(st, c.opts.MaxClaims)
	c.mu.Lock()
	same := c.desired != nil && slices.Equal(c.desired, desired)
	c.desired = desired
	c.mu.Unlock()
	if !same {
		c.enqueue()
	}
}

// enqueue asks for a sync no earlier than the next write is allowed.
func (c *Controller) enqueue() {
	c.mu.Lock()
	wait := c.nextWrite.Sub(c.opts.Clock.Now())
	c.mu.Unlock()
	c.queue.AddAfter(syncKey, wait)
}

// Run keeps the claims until ctx ends. It returns an error only when the
// claims' cache cannot start.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrashWithContext(ctx)
	logger := klog.FromContext(ctx).WithName("clusterclaims")
	defer c.queue.ShutDown()
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("timed out waiting for the cluster claims' cache")
	}
	logger.Info("Keeping cluster claims", "minInterval", c.opts.MinInterval, "maxClaims", c.opts.MaxClaims)
	// The cache has synced, so the loop has none to wait for; the first
	// report, through Observe, queues the first sync.
	workers.Loop{Name: "clusterclaims", Queue: c.queue, Hold: c.hold, Sync: c.syncClaims, Workers: 1}.Run(ctx)
	return nil
}

// hold keeps writes MinInterval apart: it returns how long a sync must still
// wait. Only a sync that writes starts the next interval, so a sync that
// finds the claims as desired costs nothing.
func (c *Controller) hold(string) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextWrite.Sub(c.opts.Clock.Now())
}

// syncClaims is the loop's Sync: it writes the claims of the latest report.
// A failure is retried with backoff from MinInterval.
func (c *Controller) syncClaims(ctx context.Context, _ string) error {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	desired := c.desired
	c.mu.Unlock()
	if desired == nil {
		return nil // no report yet: nothing is known, so nothing is removed either
	}
	wrote, err := c.sync(ctx, desired)
	if wrote {
		c.mu.Lock()
		c.nextWrite = now.Add(c.opts.MinInterval)
		c.mu.Unlock()
	}
	return err
}

// sync makes the agent's claims on the cluster those desired: it creates and
// updates them, and deletes its own that are no longer desired. A claim of
// the same name that is not the agent's is left alone. It reports whether it
// wrote anything, also when it failed half-way.
func (c *Controller) sync(ctx context.Context, desired []Claim) (wrote bool, err error) {
	logger := klog.FromContext(ctx)
	api := c.client.ClusterV1alpha1().ClusterClaims()
	own, err := c.lister.List(labels.Everything())
	if err != nil {
		return false, fmt.Errorf("listing the agent's cluster claims: %w", err)
	}
	var errs []error
	for _, d := range desired {
		i := slices.IndexFunc(own, func(o *clusterv1alpha1.ClusterClaim) bool { return o.Name == d.Name })
		if i >= 0 {
			if own[i].Spec.Value == d.Value {
				continue
			}
			next := own[i].DeepCopy()
			next.Spec.Value = d.Value
			wrote = true
			if _, err := api.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
				errs = append(errs, fmt.Errorf("updating cluster claim %s: %w", d.Name, err))
			}
			continue
		}
		claim := &clusterv1alpha1.ClusterClaim{
			ObjectMeta: metav1.ObjectMeta{Name: d.Name, Labels: map[string]string{ManagedByLabel: ManagedBy}},
			Spec:       clusterv1alpha1.ClusterClaimSpec{Value: d.Value},
		}
		_, err := api.Create(ctx, claim, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			if cur, getErr := api.Get(ctx, d.Name, metav1.GetOptions{}); getErr == nil && cur.Labels[ManagedByLabel] != ManagedBy {
				// Someone else's claim of that name: theirs to keep.
				logger.V(logs.Changes).Info("Leaving a cluster claim of another owner alone", "claim", d.Name)
				continue
			}
		} else {
			wrote = true
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("creating cluster claim %s: %w", d.Name, err))
		}
	}
	for _, o := range own {
		if slices.ContainsFunc(desired, func(d Claim) bool { return d.Name == o.Name }) {
			continue
		}
		wrote = true
		err := api.Delete(ctx, o.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &o.UID}})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting stale cluster claim %s: %w", o.Name, err))
		}
	}
	if wrote && len(errs) == 0 {
		logger.V(logs.Changes).Info("Wrote cluster claims", "claims", desired)
	}
	return wrote, errors.Join(errs...)
}

// Served reports whether the cluster serves ClusterClaims, whose CRD comes
// with OCM's klusterlet (or fleetfit install crds --side spoke).
func Served(d discovery.ServerResourcesInterface) (bool, error) {
	return apiserved.Served(d, clusterv1alpha1.GroupVersion.String(), "clusterclaims")
}
