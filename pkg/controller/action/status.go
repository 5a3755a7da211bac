package action

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

// updateStatus writes status.clusters, the Delivered condition and the moves that completed,
// from the ManifestWorks. generation is the intent's generation that was delivered; delivered
// are the ManifestWorks as the sync left them, by cluster, which the informer may not hold yet.
//
// The status is written whole with the resourceVersion it was read at, so that nothing
// another controller wrote meanwhile (the placement controller's conditions, the reschedule
// controller's moves) is lost: on a conflict the intent is read again and its status computed
// anew from the fresh one.
func (c *Controller) updateStatus(ctx context.Context, in *fleetfitv1alpha1.HPAIntent, generation int64, clusters []string,
	delivered map[string]*workv1.ManifestWork, departures []departure, deliveryErrs []error) error {
	now := c.opts.Clock.Now()
	intents := c.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(in.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		status := c.statusOf(in, generation, clusters, delivered, departures, deliveryErrs, now)
		if equality.Semantic.DeepEqual(*status, in.Status) {
			return nil
		}
		upd := in.DeepCopy()
		upd.Status = *status
		_, err := intents.UpdateStatus(ctx, upd, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return nil // deleted: its deletion requeues it
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		klog.FromContext(ctx).V(logs.Changes).Info("Conflict writing the intent's status, reading it again")
		fresh, getErr := intents.Get(ctx, in.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(getErr) || getErr == nil && fresh.UID != in.UID {
			return nil
		}
		if getErr != nil {
			return getErr
		}
		in = fresh
		return err
	})
}

// statusOf returns the intent's status with the deliveries on the decided clusters and on the
// clusters kept for a move, the Delivered condition, and the moves completed now.
func (c *Controller) statusOf(in *fleetfitv1alpha1.HPAIntent, generation int64, clusters []string,
	delivered map[string]*workv1.ManifestWork, departures []departure, deliveryErrs []error, now time.Time) *fleetfitv1alpha1.HPAIntentStatus {
	status := in.Status.DeepCopy()
	at := metav1.NewTime(now)
	previous := map[string]fleetfitv1alpha1.ClusterDelivery{}
	for _, d := range in.Status.Clusters {
		previous[d.ClusterName] = d
	}
	delivery := func(cluster, why string) fleetfitv1alpha1.ClusterDelivery {
		d := fleetfitv1alpha1.ClusterDelivery{ClusterName: cluster, ManifestWork: WorkName(in), State: fleetfitv1alpha1.DeliveryPending}
		var msg string
		w := delivered[cluster]
		if w == nil {
			w, _ = c.works.ManifestWorks(cluster).Get(WorkName(in))
		}
		if w != nil {
			d.State, msg = deliveryState(w)
			d.Replicas, d.ReadyReplicas = workloadReplicas(in, w)
		} else if why == "" && waitsForShare(in, cluster) {
			why = "waiting for the cluster's share of the replicas"
		}
		d.Message = joinNotes(why, msg, unschedulableNote(c.inventory(cluster), in, now))
		d.LastTransitionTime = at
		if p, ok := previous[cluster]; ok && p.State == d.State {
			d.LastTransitionTime = p.LastTransitionTime
		}
		return d
	}

	status.Clusters = nil
	available, failed := 0, 0
	var notes []string
	waiting := false // pods on a decided cluster wait for a node
	for _, cluster := range clusters {
		d := delivery(cluster, "")
		switch d.State {
		case fleetfitv1alpha1.DeliveryAvailable:
			available++
		case fleetfitv1alpha1.DeliveryFailed, fleetfitv1alpha1.DeliveryDegraded:
			failed++
		}
		if note := unschedulableNote(c.inventory(cluster), in, now); note != "" {
			waiting = true
			notes = append(notes, cluster+": "+note)
		}
		status.Clusters = append(status.Clusters, d)
	}
	for _, dep := range departures {
		if dep.keep {
			d := delivery(dep.cluster, dep.why)
			notes = append(notes, dep.cluster+": "+d.Message)
			status.Clusters = append(status.Clusters, d)
		}
	}
	slices.SortFunc(status.Clusters, func(a, b fleetfitv1alpha1.ClusterDelivery) int { return strings.Compare(a.ClusterName, b.ClusterName) })

	cond := metav1.Condition{Type: fleetfitv1alpha1.ConditionDelivered, ObservedGeneration: generation}
	switch {
	case len(deliveryErrs) > 0:
		msgs := make([]string, len(deliveryErrs))
		for i, err := range deliveryErrs {
			msgs[i] = err.Error()
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, "DeliveryError"
		cond.Message = textcap.Join(msgs, "; ", 10, textcap.MaxMessage)
	case len(clusters) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, "NoClusters", "the Placement decides no cluster yet"
	case failed > 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, "Failed"
		cond.Message = fmt.Sprintf("%d of %d clusters report a failed or degraded delivery", failed, len(clusters))
	case available == len(clusters):
		cond.Status, cond.Reason = metav1.ConditionTrue, "Available"
		cond.Message = fmt.Sprintf("the workload is available on %d cluster(s)", len(clusters))
	case waiting:
		cond.Status, cond.Reason = metav1.ConditionFalse, "Unschedulable"
		cond.Message = fmt.Sprintf("the workload is available on %d of %d clusters", available, len(clusters))
	default:
		cond.Status, cond.Reason = metav1.ConditionFalse, "Delivering"
		cond.Message = fmt.Sprintf("the workload is available on %d of %d clusters", available, len(clusters))
	}
	if len(notes) > 0 {
		cond.Message = textcap.Join(append([]string{cond.Message}, notes...), "; ", 11, textcap.MaxMessage)
	}
	meta.SetStatusCondition(&status.Conditions, cond)
	completeMoves(status, clusters, departures, now)
	return status
}

// completeMoves completes the moves away from the clusters whose departure completes, and
// those away from a cluster the intent is decided on again after its back-off: that move did
// not happen, and the reschedule controller starts no other while one is in progress. Before
// the back-off ends, a move from a decided cluster is one whose decisions have not changed yet.
func completeMoves(status *fleetfitv1alpha1.HPAIntentStatus, decided []string, departures []departure, now time.Time) {
	done := map[string]bool{}
	for _, d := range departures {
		if d.complete {
			done[d.cluster] = true
		}
	}
	for i := range status.Moves {
		m := &status.Moves[i]
		if m.Completed != nil {
			continue
		}
		if done[m.From] || slices.Contains(decided, m.From) && !now.Before(m.BackoffUntil.Time) {
			m.Completed = &metav1.Time{Time: now}
		}
	}
}

// nextBackoffEnd returns when the back-off of a move away from a still decided cluster ends
// (completeMoves completes it then), and false when there is none.
func nextBackoffEnd(status *fleetfitv1alpha1.HPAIntentStatus, decided []string, now time.Time) (time.Time, bool) {
	var next time.Time
	for _, m := range status.MovingFrom() {
		if slices.Contains(decided, m.From) && now.Before(m.BackoffUntil.Time) && (next.IsZero() || m.BackoffUntil.Time.Before(next)) {
			next = m.BackoffUntil.Time
		}
	}
	return next, !next.IsZero()
}

// joinNotes joins the non-empty parts of a delivery's message.
func joinNotes(parts ...string) string {
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	return textcap.Join(parts, "; ", len(parts), textcap.MaxMessage)
}

// deliveryState reads a ManifestWork's conditions and its workloads' status feedback.
func deliveryState(w *workv1.ManifestWork) (fleetfitv1alpha1.DeliveryState, string) {
	applied := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkApplied)
	availableCond := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkAvailable)
	degraded := meta.FindStatusCondition(w.Status.Conditions, workv1.WorkDegraded)
	replicas := feedback(w)
	switch {
	case applied != nil && applied.Status == metav1.ConditionFalse:
		return fleetfitv1alpha1.DeliveryFailed, applied.Message
	case degraded != nil && degraded.Status == metav1.ConditionTrue:
		return fleetfitv1alpha1.DeliveryDegraded, degraded.Message
	case availableCond != nil && availableCond.Status == metav1.ConditionTrue:
		return fleetfitv1alpha1.DeliveryAvailable, replicas
	case applied != nil && applied.Status == metav1.ConditionTrue:
		return fleetfitv1alpha1.DeliveryApplied, replicas
	}
	return fleetfitv1alpha1.DeliveryPending, "waiting for the work agent"
}

// feedback summarises the ready replicas the work agent reports, e.g. "Deployment web: 2/3 ready".
func feedback(w *workv1.ManifestWork) string {
	var parts []string
	for _, m := range w.Status.ResourceStatus.Manifests {
		values := map[string]int64{}
		for _, v := range m.StatusFeedbacks.Values {
			if v.Value.Integer != nil {
				values[v.Name] = *v.Value.Integer
			}
		}
		if want, ok := values["Replicas"]; ok {
			parts = append(parts, fmt.Sprintf("%s %s: %d/%d ready", m.ResourceMeta.Kind, m.ResourceMeta.Name, values["ReadyReplicas"], want))
		}
	}
	return strings.Join(parts, "; ")
}
