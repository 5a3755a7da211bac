package reporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/version"
)

// inventoryWriter keeps the cluster's ClusterInventory — named after the
// cluster, in the cluster's namespace — equal to the latest report.
type inventoryWriter struct {
	client  fleetfitclient.Interface
	cluster string
	version string

	// last is the object as the hub returned it after our last write or
	// read; nil when unknown, which makes the next sync read it first.
	last *v1alpha1.ClusterInventory
	// lastAt is when last was obtained. A report that does not change is
	// never written, so last is read again after reread to notice an
	// inventory that someone deleted or edited on the hub.
	lastAt time.Time
	reread time.Duration
	// heartbeat is how old observedAt may get before an unchanged report is written again:
	// the hub takes an inventory older than framework.InventoryStaleAfter for a silent agent
	// and stops placing hardware requirements on the cluster. With a sync at least every
	// ScoreValidity/2, a heartbeat of ScoreValidity/4 keeps observedAt within ScoreValidity/2.
	heartbeat time.Duration
}

func newInventoryWriter(client fleetfitclient.Interface, opts Options) *inventoryWriter {
	return &inventoryWriter{client: client, cluster: opts.ClusterName, version: version.Get().String(), reread: opts.ScoreValidity / 2, heartbeat: opts.ScoreValidity / 4}
}

func (w *inventoryWriter) name() string { return "ClusterInventory" }

func (w *inventoryWriter) sync(ctx context.Context, st *syncState) error {
	want := st.report.DeepCopy()
	want.AgentVersion = w.version
	if w.last == nil || st.now.Sub(w.lastAt) >= w.reread {
		cur, err := w.getOrCreate(ctx)
		if err != nil {
			return err
		}
		w.last, w.lastAt = cur, st.now
	}
	same := sameContent(&w.last.Status, want)
	if same && st.now.Sub(w.last.Status.ObservedAt.Time) < w.heartbeat {
		st.inventory = w.last
		return nil
	}
	updated, err := w.write(ctx, want, st.now)
	if apierrors.IsConflict(err) {
		// The hub writes the spec (the label keys it asks for), which moves the object on:
		// read it again and write at once rather than a retry interval later.
		cur, getErr := w.getOrCreate(ctx)
		if getErr != nil {
			w.last = nil
			return errors.Join(err, getErr)
		}
		w.last, w.lastAt = cur, st.now
		updated, err = w.write(ctx, want, st.now)
	}
	if err != nil {
		// Someone else changed or deleted it: read it again next time.
		w.last = nil
		return fmt.Errorf("updating status of %s/%s: %w", w.cluster, w.cluster, err)
	}
	w.last, w.lastAt = updated, st.now
	st.inventory = updated
	klog.FromContext(ctx).V(logs.Changes).Info("Wrote ClusterInventory", "revision", updated.Status.Revision, "nodes", updated.Status.NodeCount, "shapes", updated.Status.ShapeCount)
	return nil
}

// write puts want onto the status of w.last through the status subresource, which never
// changes the spec the hub owns.
func (w *inventoryWriter) write(ctx context.Context, want *v1alpha1.ClusterInventoryStatus, now time.Time) (*v1alpha1.ClusterInventory, error) {
	same := sameContent(&w.last.Status, want)
	next := w.last.DeepCopy()
	next.Status = *want.DeepCopy()
	// Revision counts content changes from what the hub holds, so it keeps increasing across
	// agent restarts; a heartbeat only moves observedAt.
	next.Status.Revision = w.last.Status.Revision
	if !same {
		next.Status.Revision++
	}
	next.Status.ObservedAt = metav1.NewTime(now)
	return w.client.FleetfitV1alpha1().ClusterInventories(w.cluster).UpdateStatus(ctx, next, metav1.UpdateOptions{})
}

func (w *inventoryWriter) getOrCreate(ctx context.Context) (*v1alpha1.ClusterInventory, error) {
	invs := w.client.FleetfitV1alpha1().ClusterInventories(w.cluster)
	cur, err := invs.Get(ctx, w.cluster, metav1.GetOptions{})
	if err == nil {
		return cur, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading %s/%s: %w", w.cluster, w.cluster, err)
	}
	// The status subresource ignores status on create; it is written next.
	cur, err = invs.Create(ctx, &v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: w.cluster, Namespace: w.cluster}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating %s/%s: %w", w.cluster, w.cluster, err)
	}
	return cur, nil
}

// sameContent compares two reports ignoring when they were made and their
// revision. Quantities compare by value, since the hub may re-format them.
func sameContent(a, b *v1alpha1.ClusterInventoryStatus) bool {
	x, y := *a, *b
	x.Revision, y.Revision = 0, 0
	x.ObservedAt, y.ObservedAt = metav1.Time{}, metav1.Time{}
	return apiequality.Semantic.DeepEqual(x, y)
}
