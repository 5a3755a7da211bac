package steady

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/version"
)

// reporter writes the clusters' ClusterInventories as their fleetfit agents write them: the
// whole status through the status subresource, computed by pkg/inventory from the cluster's
// nodes and pods, with the agent's version; revision grows by one when the content changed
// and observedAt is the time of the write. A conflict (the hub writes the spec) is retried on
// the object read again, as the agent does.
type reporter struct {
	client       fleetfitclient.Interface
	clusters     []*clusterModel
	agentVersion string
	// writes counts the reports written.
	writes atomic.Int64
}

func newReporter(client fleetfitclient.Interface, clusters int) *reporter {
	r := &reporter{client: client, agentVersion: version.Get().String()}
	for i := range clusters {
		r.clusters = append(r.clusters, newClusterModel(i))
	}
	return r
}

// create creates the cluster's ClusterInventory and writes its first report.
func (r *reporter) create(ctx context.Context, c *clusterModel) error {
	created, err := r.client.FleetfitV1alpha1().ClusterInventories(c.name).Create(ctx,
		&v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: c.name}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the ClusterInventory of %s: %w", c.name, err)
	}
	c.mu.Lock()
	c.last = created
	c.mu.Unlock()
	_, err = r.report(ctx, c, nil)
	return err
}

// report applies change (nil: none) to what the cluster's agent sees and writes the resulting
// report. It returns when the API server accepted the write.
func (r *reporter) report(ctx context.Context, c *clusterModel, change func(*clusterModel)) (time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if change != nil {
		change(c)
	}
	want := c.status(r.agentVersion)
	invs := r.client.FleetfitV1alpha1().ClusterInventories(c.name)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		next := c.last.DeepCopy()
		next.Status = *want.DeepCopy()
		next.Status.Revision = c.last.Status.Revision
		if !sameContent(&c.last.Status, &want) {
			next.Status.Revision++
		}
		next.Status.ObservedAt = metav1.Now()
		updated, err := invs.UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err == nil {
			c.last = updated
			return nil
		}
		if cur, getErr := invs.Get(ctx, c.name, metav1.GetOptions{}); getErr == nil {
			c.last = cur
		}
		return err
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("writing the ClusterInventory of %s: %w", c.name, err)
	}
	c.reports++
	r.writes.Add(1)
	return time.Now(), nil
}

// sameContent compares two reports ignoring when they were made and their revision, as the
// agent does before it writes.
func sameContent(a, b *v1alpha1.ClusterInventoryStatus) bool {
	x, y := *a, *b
	x.Revision, y.Revision = 0, 0
	x.ObservedAt, y.ObservedAt = metav1.Time{}, metav1.Time{}
	return apiequality.Semantic.DeepEqual(x, y)
}

// toggleJitter is the small change of one report in two: the jitter pod comes or goes.
func toggleJitter(c *clusterModel) { c.jittered = !c.jittered }

// steadyReports writes reports at rate per second, round-robin over the clusters, until ctx
// ends. Every other report of a cluster changes nothing but observedAt (a heartbeat); the
// others also move its jitter pod (see jitterCPU), which no decision depends on. Writers run
// concurrently so that one slow answer does not hold the pace, and catch up when they fell
// behind; the caller reports the rate achieved. It returns once the writes under way when ctx
// ended are done, with the first that failed.
func (r *reporter) steadyReports(ctx context.Context, rate float64) error {
	return r.reports(ctx, rate, true)
}

// heartbeats writes reports that change nothing but observedAt at rate per second, as agents
// with nothing to report do (every 2.5 minutes each), until ctx ends: while the hub settles, so
// that no report grows older than the hub's --inventory-stale-after when creating a large fleet
// takes longer than that.
func (r *reporter) heartbeats(ctx context.Context, rate float64) error {
	return r.reports(ctx, rate, false)
}

// reports writes reports at rate, with the jitter pod moving every other report if jitter.
func (r *reporter) reports(ctx context.Context, rate float64, jitter bool) error {
	interval := time.Duration(float64(time.Second) / rate)
	// ctx ends the pace, not the writes under way: they finish as an agent's would.
	writes := context.WithoutCancel(ctx)
	jobs := make(chan *clusterModel)
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	for range 16 {
		wg.Go(func() {
			for c := range jobs {
				change := toggleJitter
				c.mu.Lock()
				if c.reports%2 == 0 || !jitter {
					change = nil
				}
				c.mu.Unlock()
				if _, err := r.report(writes, c, change); err != nil {
					once.Do(func() { firstErr = err })
				}
			}
		})
	}
	start := time.Now()
pace:
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			break pace
		case <-time.After(time.Until(start.Add(time.Duration(i) * interval))):
		}
		select {
		case jobs <- r.clusters[i%len(r.clusters)]:
		case <-ctx.Done():
			break pace
		}
	}
	close(jobs)
	wg.Wait()
	return firstErr
}

// makeRoom adds to cluster c the node that fits waiting placement w alone (see roomFor) and
// writes the report. It returns when the write succeeded.
func (r *reporter) makeRoom(ctx context.Context, c *clusterModel, w int) (time.Time, error) {
	return r.report(ctx, c, func(c *clusterModel) { c.nodes = append(c.nodes, roomFor(c.name, w)) })
}

// freeVectors counts the free vectors of a report, for the log.
func freeVectors(st *v1alpha1.ClusterInventoryStatus) int {
	n := 0
	for _, s := range st.NodeShapes {
		n += len(s.Free)
	}
	return n
}

// cpuFree is the report's free cpu over the cluster, for the log.
func cpuFree(st *v1alpha1.ClusterInventoryStatus) string {
	for _, r := range st.Resources {
		if r.Name == corev1.ResourceCPU {
			return r.Free.String()
		}
	}
	return "0"
}
