package placement

import (
	"context"
	"encoding/json"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// patchStatus merge-patches the status of an object with status. It decodes the answer into
// into when into is not nil, and otherwise reads nothing back: the informers deliver the
// result, and decoding every answer costs about as much CPU as the write's own watch event.
func patchStatus(ctx context.Context, rc rest.Interface, namespace, resource, name string, status any, into runtime.Object) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	result := rc.Patch(types.MergePatchType).Namespace(namespace).Resource(resource).Name(name).SubResource("status").
		Body(patch).Do(ctx)
	if into != nil {
		return result.Into(into)
	}
	return result.Error()
}

// writeTracker remembers, per object, the last content this controller wrote and what the
// object held before. Informers deliver our own writes back a little later, so for a moment a
// lister still shows the content from before the write; the tracker tells that stale view
// from a change someone else made, which saves a redundant write (and a second cycle) per
// placement.
type writeTracker struct{ m sync.Map }

type write struct{ before, after any }

// record notes that key changes from before to after. Call it before the write, so that the
// informer event of the write can never arrive before the record.
func (w *writeTracker) record(key string, before, after any) {
	w.m.Store(key, write{before: before, after: after})
}

// forget drops what is known about key.
func (w *writeTracker) forget(key string) { w.m.Delete(key) }

// ours reports whether current is what we last wrote for key.
func (w *writeTracker) ours(key string, current any) bool {
	v, ok := w.m.Load(key)
	return ok && equality.Semantic.DeepEqual(v.(write).after, current)
}

// upToDate reports whether writing desired over current is unnecessary: current already holds
// it, or current is the stale view from just before our own write of desired.
func (w *writeTracker) upToDate(key string, current, desired any) bool {
	if equality.Semantic.DeepEqual(current, desired) {
		return true
	}
	v, ok := w.m.Load(key)
	if !ok {
		return false
	}
	last := v.(write)
	return equality.Semantic.DeepEqual(last.after, desired) && equality.Semantic.DeepEqual(last.before, current)
}

// byPlacement indexes PlacementDecisions by "namespace/placement", from OCM's placement
// label: a cycle reads its placement's decisions without going through every decision of the
// namespace.
const byPlacement = "byPlacement"

// addDecisionIndex adds byPlacement to the PlacementDecision informer, unless another user of
// the shared informer already did.
func addDecisionIndex(informer toolscache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[byPlacement]; ok {
		return nil
	}
	return informer.AddIndexers(toolscache.Indexers{byPlacement: func(obj any) ([]string, error) {
		d, ok := obj.(*clusterv1beta1.PlacementDecision)
		if !ok || d.Labels[clusterv1beta1.PlacementLabel] == "" {
			return nil, nil
		}
		return []string{d.Namespace + "/" + d.Labels[clusterv1beta1.PlacementLabel]}, nil
	}})
}

func (c *Controller) existingDecisions(p *clusterv1beta1.Placement) (map[string]*clusterv1beta1.PlacementDecision, error) {
	list, err := c.decisionsByPlacement.ByIndex(byPlacement, p.Namespace+"/"+p.Name)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*clusterv1beta1.PlacementDecision, len(list))
	for _, obj := range list {
		if d, ok := obj.(*clusterv1beta1.PlacementDecision); ok && metav1.IsControlledBy(d, p) {
			out[d.Name] = d
		}
	}
	return out, nil
}

// limitScoreWrites applies scoreRateLimit: when the clusters of every decision object are
// unchanged and only scores moved, the recorded scores are kept until the limit has passed
// since the last score-only write. It returns how long until scores may be written.
func (c *Controller) limitScoreWrites(key string, p *clusterv1beta1.Placement, desired []desiredDecision, existing map[string]*clusterv1beta1.PlacementDecision) time.Duration {
	// PlanCycle has refused an invalid limit already.
	limit, _ := ScoreRateLimit(p)
	now := c.opts.Clock.Now()
	onlyScores := false
	for k := range desired {
		old, ok := existing[desired[k].name]
		if !ok || !slices.Equal(decisionClusterNames(old.Status.Decisions), decisionClusterNames(desired[k].decisions)) {
			// The selection changes: written at once, and the limit counts from now.
			c.scoreWrites.Store(key, now)
			return 0
		}
		if !equality.Semantic.DeepEqual(old.Status.Decisions, desired[k].decisions) {
			onlyScores = true
		}
	}
	if !onlyScores {
		return 0
	}
	if last, ok := c.scoreWrites.Load(key); ok {
		if wait := last.(time.Time).Add(limit).Sub(now); wait > 0 {
			for k := range desired {
				desired[k].decisions = existing[desired[k].name].Status.Decisions
			}
			return wait
		}
	}
	c.scoreWrites.Store(key, now)
	return 0
}

// bind writes the decision objects: interim lists first for clusters that move between
// objects, then every final list, then deletes the objects no longer needed. Nothing is
// written when an object already holds what it should.
func (c *Controller) bind(ctx context.Context, p *clusterv1beta1.Placement, desired []desiredDecision,
	existing map[string]*clusterv1beta1.PlacementDecision, existingNames map[string][]string) error {
	for name, interim := range interimDecisions(desired, existingNames) {
		if old, ok := existing[name]; ok {
			// Read back: the final list may need a label update on the same object.
			updated, err := c.writeDecisionStatus(ctx, old, interim, true)
			if err != nil {
				return err
			}
			existing[name] = updated
		}
	}
	keep := sets.New[string]()
	var errs []error
	for _, d := range desired {
		keep.Insert(d.name)
		if err := c.writeDecision(ctx, p, d, existing[d.name]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// Do not delete anything while some final list is not written: a cluster may be on
		// its way into an object that failed.
		return errors.Join(errs...)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range existing {
			if !yield(n) {
				return
			}
		}
	}) {
		if keep.Has(name) {
			continue
		}
		err := c.client.ClusterV1beta1().PlacementDecisions(p.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		c.recorder.Eventf(p, existing[name], corev1.EventTypeNormal, "DecisionDelete", "DecisionDeleted",
			"Decision %s is deleted with placement %s in namespace %s", name, p.Name, p.Namespace)
	}
	return errors.Join(errs...)
}

func (c *Controller) writeDecision(ctx context.Context, p *clusterv1beta1.Placement, d desiredDecision, old *clusterv1beta1.PlacementDecision) error {
	labels := d.labels(p.Name)
	client := c.client.ClusterV1beta1().PlacementDecisions(p.Namespace)
	created := old == nil
	if created {
		created, err := client.Create(ctx, &clusterv1beta1.PlacementDecision{
			ObjectMeta: metav1.ObjectMeta{
				Name: d.name, Namespace: p.Namespace, Labels: labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(p, clusterv1beta1.SchemeGroupVersion.WithKind("Placement"))},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("creating PlacementDecision %s: %w", d.name, err)
		}
		c.recorder.Eventf(p, created, corev1.EventTypeNormal, "DecisionCreate", "DecisionCreated",
			"Decision %s is created with placement %s in namespace %s", d.name, p.Name, p.Namespace)
		old = created
	}
	if !equality.Semantic.DeepEqual(old.Labels, labels) {
		upd := old.DeepCopy()
		upd.Labels = labels
		var err error
		if old, err = client.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating labels of PlacementDecision %s: %w", d.name, err)
		}
	}
	if old.Status.Decisions != nil && c.decisionWrites.upToDate(old.Namespace+"/"+old.Name, old.Status.Decisions, d.decisions) {
		return nil
	}
	if _, err := c.writeDecisionStatus(ctx, old, d.decisions, false); err != nil {
		return err
	}
	if created {
		// One event per new decision object: its first list is part of its creation. Events
		// are writes to the API server too, and a backlog of new placements would otherwise
		// make two for each.
		return nil
	}
	c.recorder.Eventf(p, old, corev1.EventTypeNormal, "DecisionUpdate", "DecisionUpdated",
		"Decision %s is updated with placement %s in namespace %s", d.name, p.Name, p.Namespace)
	return nil
}

// writeDecisionStatus writes the decision list of a PlacementDecision. With readBack, it
// returns the object the API server holds after the write; without, nil.
func (c *Controller) writeDecisionStatus(ctx context.Context, old *clusterv1beta1.PlacementDecision, decisions []clusterv1beta1.ClusterDecision,
	readBack bool) (*clusterv1beta1.PlacementDecision, error) {
	if decisions == nil {
		decisions = []clusterv1beta1.ClusterDecision{}
	}
	key := old.Namespace + "/" + old.Name
	c.decisionWrites.record(key, old.Status.Decisions, decisions)
	// A merge patch of the whole list: no conflict with a concurrent label update, and no
	// retry round trip when the informer has not seen our previous write yet.
	var out *clusterv1beta1.PlacementDecision
	var into runtime.Object // an interface holding a nil pointer would not be nil
	if readBack {
		out = &clusterv1beta1.PlacementDecision{}
		into = out
	}
	err := patchStatus(ctx, c.client.ClusterV1beta1().RESTClient(), old.Namespace, "placementdecisions", old.Name,
		map[string]any{"decisions": decisions}, into)
	if err != nil {
		c.decisionWrites.forget(key)
		return nil, fmt.Errorf("updating PlacementDecision %s: %w", old.Name, err)
	}
	return out, nil
}

func (c *Controller) updateStatus(ctx context.Context, p *clusterv1beta1.Placement, status clusterv1beta1.PlacementStatus) error {
	key := p.Namespace + "/" + p.Name
	if c.statusWrites.upToDate(key, p.Status, status) {
		return nil
	}
	c.statusWrites.record(key, *p.Status.DeepCopy(), *status.DeepCopy())
	if err := patchStatus(ctx, c.client.ClusterV1beta1().RESTClient(), p.Namespace, "placements", p.Name, status, nil); err != nil {
		c.statusWrites.forget(key)
		return fmt.Errorf("updating status of placement %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}
