package action

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/conflict"
	"github.com/fleetfit/fleetfit/pkg/delivery"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	in, err := c.intents.HPAIntents(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Gone without our finalizer (never delivered, or the finalizer was removed by hand):
		// clean up whatever is left.
		_, err := c.deleteWorks(ctx, ns, name, nil)
		return err
	}
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("hpaIntent", klog.KObj(in))
	ctx = klog.NewContext(ctx, logger)

	if !in.DeletionTimestamp.IsZero() || in.Spec.Workload == nil || len(in.Spec.Workload.Manifests) == 0 {
		remaining, err := c.deleteWorks(ctx, ns, name, nil)
		if err != nil || remaining > 0 {
			return err
		}
		return c.removeFinalizer(ctx, in)
	}
	// A broken intent keeps what was delivered: its Valid condition says what to fix.
	if valid, known := hpa.IsValid(in); !valid || !known {
		return nil
	}
	// Until its placement has been scheduled with it, the placement's decisions were made
	// without the intent's requirements: nothing is delivered there yet. (The placement
	// controller's status write, and then its decisions, bring the intent back here.)
	if in.Status.ScheduledPlacement != in.Spec.PlacementRef.Name {
		return nil
	}
	// The validation controller refuses what the hub does not deliver; this is the last
	// check before anything reaches a managed cluster (the policy may have changed since).
	if problems := c.policy().Check(in); len(problems) > 0 {
		c.clients.Recorder.Eventf(in, nil, corev1.EventTypeWarning, "ManifestNotAllowed", "Deliver",
			"Nothing is delivered: %s", textcap.Join(problems, "; ", 5, textcap.MaxMessage))
		return nil // terminal until the intent or the hub's policy changes
	}
	compiled, err := c.fleet.Intent(in)
	if err != nil {
		// Valid, yet it does not resolve: the validation controller has not seen this
		// generation's problem yet. Say so; its next verdict requeues the intent.
		c.clients.Recorder.Eventf(in, nil, corev1.EventTypeWarning, "InvalidWorkload", "Deliver",
			"Nothing new is delivered: %s", textcap.Truncate(err.Error(), textcap.MaxMessage))
		return nil
	}
	if in, err = c.addFinalizer(ctx, in); err != nil {
		return err
	}

	clusters, err := c.decidedClusters(in)
	if err != nil {
		return err
	}
	var errs []error
	// delivered are the ManifestWorks as this sync left them, which the informer may not hold
	// yet: the status reports the replicas they deliver.
	delivered := map[string]*workv1.ManifestWork{}
	for _, cluster := range clusters {
		w, err := c.deliver(ctx, in, compiled, cluster)
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", cluster, err))
		}
		if w != nil {
			delivered[cluster] = w
		}
	}
	// The clusters the intent left: their ManifestWorks go, unless a move away from them
	// waits for the workload to be available elsewhere (make before break).
	current, departures, err := c.departures(ctx, in, clusters)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if current == nil {
		return errors.Join(errs...) // deleted meanwhile: its deletion requeues it
	}
	keep := sets.New(clusters...)
	for _, d := range departures {
		if d.keep {
			keep.Insert(d.cluster)
		}
	}
	if _, err := c.deleteWorks(ctx, ns, name, keep); err != nil {
		errs = append(errs, err)
		// A move completes once its ManifestWork is deleted; the retry completes it.
		for i := range departures {
			departures[i].complete = false
		}
	}
	for _, d := range departures {
		if d.complete && !d.gone {
			c.clients.Recorder.Eventf(in, nil, corev1.EventTypeNormal, "MovedAway", "DeleteManifestWork",
				"The workload left cluster %s: %s", d.cluster, d.why)
		}
	}
	// A conflict is another writer's newer ManifestWork, not a failed delivery: it is
	// retried, and the Delivered condition does not report it.
	failures := slices.DeleteFunc(slices.Clone(errs), conflict.Only)
	if err := c.updateStatus(ctx, current, in.Generation, clusters, delivered, departures, failures); err != nil {
		errs = append(errs, err)
	}
	if end, ok := nextBackoffEnd(&current.Status, clusters, c.opts.Clock.Now()); ok {
		c.queue.AddAfter(key, end.Sub(c.opts.Clock.Now()))
	}
	return errors.Join(errs...)
}

// decidedClusters lists the clusters of the placement's decisions, sorted.
func (c *Controller) decidedClusters(in *fleetfitv1alpha1.HPAIntent) ([]string, error) {
	sel := labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: in.Spec.PlacementRef.Name})
	ds, err := c.decisions.PlacementDecisions(in.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	names := sets.New[string]()
	for _, d := range ds {
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName != "" {
				names.Insert(cd.ClusterName)
			}
		}
	}
	return sets.List(names), nil
}

// deliver creates or updates the intent's ManifestWork on one cluster, and returns it as it is
// stored now: the one it wrote, the existing one when it had nothing to change, nil when the
// cluster has none (it waits for its share of a split intent's replicas, or the write failed).
func (c *Controller) deliver(ctx context.Context, in *fleetfitv1alpha1.HPAIntent, compiled *hpa.Intent, cluster string) (*workv1.ManifestWork, error) {
	existing, err := c.works.ManifestWorks(cluster).Get(WorkName(in))
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if apierrors.IsNotFound(err) {
		existing = nil
	}
	if waitsForShare(in, cluster) {
		// The placement controller writes the shares before the decisions; this intent's
		// status update, with the cluster's share, requeues it. What the cluster has meanwhile
		// stays as it is.
		klog.FromContext(ctx).V(logs.Changes).Info("Waiting for the cluster's share of the replicas", "cluster", cluster)
		return existing, nil
	}
	optional := c.optionalFor(compiled, cluster, existing)
	want, err := desiredWork(in, &compiled.Resolved, cluster, optional)
	if err != nil {
		return nil, err
	}
	keepJobTemplates(existing, want)
	if in.Spec.Split != nil {
		keepJobCompletions(existing, want)
	}
	works := c.clients.Work.WorkV1().ManifestWorks(cluster)
	if existing == nil {
		created, err := works.Create(ctx, want, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("creating ManifestWork %s/%s: %w", cluster, want.Name, err)
		}
		c.clients.Recorder.Eventf(in, nil, corev1.EventTypeNormal, "Delivering", "CreateManifestWork", "Created ManifestWork %s/%s", cluster, want.Name)
		return created, nil
	}
	if sameSpec(existing.Spec, want.Spec) && equality.Semantic.DeepEqual(existing.Labels, want.Labels) &&
		existing.Annotations[AnnotationOptional] == want.Annotations[AnnotationOptional] &&
		existing.Annotations[AnnotationIntentName] == want.Annotations[AnnotationIntentName] {
		return existing, nil
	}
	upd := existing.DeepCopy()
	upd.Spec, upd.Labels = want.Spec, want.Labels
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	for _, key := range []string{AnnotationOptional, AnnotationIntentName} {
		if v, ok := want.Annotations[key]; ok {
			upd.Annotations[key] = v
		} else {
			delete(upd.Annotations, key)
		}
	}
	updated, err := works.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating ManifestWork %s/%s: %w", cluster, want.Name, err)
	}
	c.clients.Recorder.Eventf(in, nil, corev1.EventTypeNormal, "Delivering", "UpdateManifestWork", "Updated ManifestWork %s/%s", cluster, want.Name)
	return updated, nil
}

// optionalFor returns, per consumer, the optional requirements to apply on a cluster: those
// already applied by the existing ManifestWork (its pods may be using that room now, so the
// cluster no longer shows it free), and otherwise those the cluster's inventory shows it can
// meet for every replica. The inventory is the one the scheduler read (the View of the
// cluster's info in its cache), so delivery never promises more than scheduling checked.
//
// A cluster without inventory, or one the cache does not hold (its ManagedCluster is gone),
// gets no optional requirement.
func (c *Controller) optionalFor(compiled *hpa.Intent, cluster string, existing *workv1.ManifestWork) map[string][]string {
	out := map[string][]string{}
	if existing != nil {
		if v, ok := existing.Annotations[AnnotationOptional]; ok {
			known := sets.New[string]()
			for _, cs := range compiled.Consumers {
				for _, o := range cs.Optional {
					known.Insert(cs.Name + "/" + o.Name)
				}
			}
			for _, item := range strings.Split(v, ",") {
				// Requirements the intent no longer has are dropped.
				if consumer, req, ok := strings.Cut(item, "/"); ok && known.Has(item) {
					out[consumer] = append(out[consumer], req)
				}
			}
			return out
		}
	}
	info := c.fleet.ClusterInfo(cluster)
	if info == nil || info.View == nil {
		return out
	}
	for i := range compiled.Consumers {
		cs := &compiled.Consumers[i]
		for k := range cs.Optional {
			if o := &cs.Optional[k]; cs.MeetsOptional(info.View, o) {
				out[cs.Name] = append(out[cs.Name], o.Name)
			}
		}
	}
	return out
}

// deleteWorks deletes the intent's ManifestWorks on clusters not in keep (all when keep is
// nil) and returns how many remain to be deleted.
func (c *Controller) deleteWorks(ctx context.Context, ns, name string, keep sets.Set[string]) (int, error) {
	works, err := c.works.List(WorkSelector(ns, name))
	if err != nil {
		return 0, err
	}
	var errs []error
	remaining := 0
	for _, w := range works {
		if keep.Has(w.Namespace) {
			continue
		}
		if wns, wname, ok := IntentOf(w); !ok || wns != ns || wname != name {
			continue // another intent's, whose name was cut to the same label value
		}
		remaining++
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		err := c.clients.Work.WorkV1().ManifestWorks(w.Namespace).Delete(ctx, w.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting ManifestWork %s/%s: %w", w.Namespace, w.Name, err))
		}
	}
	return remaining, errors.Join(errs...)
}

func (c *Controller) addFinalizer(ctx context.Context, in *fleetfitv1alpha1.HPAIntent) (*fleetfitv1alpha1.HPAIntent, error) {
	if slices.Contains(in.Finalizers, Finalizer) {
		return in, nil
	}
	upd := in.DeepCopy()
	upd.Finalizers = append(upd.Finalizers, Finalizer)
	return c.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(in.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
}

func (c *Controller) removeFinalizer(ctx context.Context, in *fleetfitv1alpha1.HPAIntent) error {
	if !slices.Contains(in.Finalizers, Finalizer) {
		return nil
	}
	upd := in.DeepCopy()
	upd.Finalizers = slices.DeleteFunc(upd.Finalizers, func(f string) bool { return f == Finalizer })
	_, err := c.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(in.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// policy is the delivery policy in force.
func (c *Controller) policy() *delivery.Policy {
	if c.opts.Delivery != nil {
		return c.opts.Delivery
	}
	return delivery.Default()
}
