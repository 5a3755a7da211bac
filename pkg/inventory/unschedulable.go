package inventory

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

// unschedulablePod is what SummarizeUnschedulable reads of one pod.
type unschedulablePod struct {
	intent  intentKey
	since   metav1.Time
	message string
}

// intentKey names an HPAIntent as its pods' labels do.
type intentKey struct{ namespace, name string }

func compareIntents(a, b intentKey) int {
	return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.name, b.name))
}

// unschedulableOf returns what SummarizeUnschedulable counts of p, and false when it counts
// nothing of it: p is not one of an HPAIntent's pods (it lacks one of the labels
// v1alpha1.LabelIntentNamespace and v1alpha1.LabelIntentName, or one is empty), it has a node,
// it is being deleted or has finished, or kube-scheduler has not said Unschedulable of it (it
// has not tried yet, the pod has a scheduling gate, or it failed for a reason of its own).
//
// A machine-type guest that waits for a machine is a Pending pod like any other: the
// scheduler marks it Unschedulable while no node has a free machine, and it counts then.
func unschedulableOf(p *corev1.Pod) (unschedulablePod, bool) {
	ns, name := p.Labels[v1alpha1.LabelIntentNamespace], p.Labels[v1alpha1.LabelIntentName]
	if ns == "" || name == "" || p.Spec.NodeName != "" || p.DeletionTimestamp != nil ||
		p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return unschedulablePod{}, false
	}
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type != corev1.PodScheduled {
			continue
		}
		if c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable {
			return unschedulablePod{}, false
		}
		since := c.LastTransitionTime
		if since.IsZero() {
			since = p.CreationTimestamp
		}
		return unschedulablePod{intent: intentKey{ns, name}, since: since, message: c.Message}, true
	}
	return unschedulablePod{}, false
}

// UnschedulableChanged reports whether what SummarizeUnschedulable reads of a pod differs
// between old and new, so that a follower of pods can skip the events that change nothing
// of the summary (a new resourceVersion, a status field it does not read, a pod that does not
// count coming or going). A nil pod is one that does not exist: old for an added pod, new for
// a deleted one.
func UnschedulableChanged(old, new *corev1.Pod) bool {
	var a, b unschedulablePod
	var okA, okB bool
	if old != nil {
		a, okA = unschedulableOf(old)
	}
	if new != nil {
		b, okB = unschedulableOf(new)
	}
	return okA != okB || a.intent != b.intent || !a.since.Equal(&b.since) || a.message != b.message
}

// SummarizeUnschedulable returns, per HPAIntent, what the cluster's agent reports of its
// pods that kube-scheduler could not place (see v1alpha1.ClusterInventoryStatus.Unschedulable
// for which pods count): how many there are, since when the one unschedulable longest has
// been, and the scheduler's message on that one, cut to v1alpha1.MaxUnschedulableMessage
// bytes. Pods that count nothing may be among pods; their order does not matter.
//
// At most limit intents are returned, sorted by namespace and name: those whose pods have
// waited longest, since they are the first a hub moves; omitted counts the others. The
// result depends only on the pods, never on their order, so a report computed again from the
// same pods is equal to the last one and adds no write.
func SummarizeUnschedulable(pods []*corev1.Pod, limit int) (out []v1alpha1.UnschedulableWorkload, omitted int32) {
	type entry struct {
		count  int32
		oldest unschedulablePod
		// pod names the oldest pod, to break ties between pods that became unschedulable
		// within the same second.
		pod intentKey
	}
	byIntent := map[intentKey]*entry{}
	for _, p := range pods {
		u, ok := unschedulableOf(p)
		if !ok {
			continue
		}
		pod := intentKey{p.Namespace, p.Name}
		e := byIntent[u.intent]
		if e == nil {
			byIntent[u.intent] = &entry{count: 1, oldest: u, pod: pod}
			continue
		}
		e.count++
		if u.since.Before(&e.oldest.since) || u.since.Equal(&e.oldest.since) && compareIntents(pod, e.pod) < 0 {
			e.oldest, e.pod = u, pod
		}
	}
	if len(byIntent) == 0 {
		return nil, 0
	}
	entries := make([]*entry, 0, len(byIntent))
	for _, e := range byIntent {
		entries = append(entries, e)
	}
	if limit = max(0, limit); len(entries) > limit {
		// Keep those that have waited longest.
		slices.SortFunc(entries, func(a, b *entry) int {
			return cmp.Or(a.oldest.since.Compare(b.oldest.since.Time), compareIntents(a.oldest.intent, b.oldest.intent))
		})
		omitted = int32(len(entries) - limit)
		if entries = entries[:limit]; len(entries) == 0 {
			return nil, omitted
		}
	}
	slices.SortFunc(entries, func(a, b *entry) int { return compareIntents(a.oldest.intent, b.oldest.intent) })
	out = make([]v1alpha1.UnschedulableWorkload, len(entries))
	for i, e := range entries {
		out[i] = v1alpha1.UnschedulableWorkload{
			IntentNamespace: e.oldest.intent.namespace,
			IntentName:      e.oldest.intent.name,
			PodCount:        e.count,
			Since:           e.oldest.since,
			Message:         textcap.Truncate(e.oldest.message, v1alpha1.MaxUnschedulableMessage),
		}
	}
	return out, omitted
}
