package action

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
	toolscache "k8s.io/client-go/tools/cache"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
)

// unschedulableNote says what a cluster's agent reports of the intent's pods that
// kube-scheduler could not place there ("3 pods unschedulable for 6m: 0/4 nodes are available:
// 4 Insufficient nvidia.com/gpu"), and "" when it reports none or there is no report. The
// agent names the intent by its pods' labels, so the name is compared as
// fleetfitv1alpha1.IntentLabelValue gives it.
func unschedulableNote(inv *fleetfitv1alpha1.ClusterInventory, in *fleetfitv1alpha1.HPAIntent, now time.Time) string {
	if inv == nil {
		return ""
	}
	name := fleetfitv1alpha1.IntentLabelValue(in.Name)
	for _, u := range inv.Status.Unschedulable {
		if u.IntentNamespace != in.Namespace || u.IntentName != name {
			continue
		}
		pods := "pods"
		if u.PodCount == 1 {
			pods = "pod"
		}
		note := fmt.Sprintf("%d %s unschedulable for %s", u.PodCount, pods, duration.ShortHumanDuration(max(now.Sub(u.Since.Time), 0)))
		if msg := strings.TrimSuffix(strings.TrimSpace(u.Message), "."); msg != "" {
			note += ": " + msg
		}
		return note
	}
	return ""
}

// inventory returns the agent's report of a cluster (the ClusterInventory named after it), or
// nil. It reads the informer's lister rather than the scheduler's cache: the inventory events
// that requeue an intent here (inventoryHandler) may run before the placement controller's
// handler has put the same report in the cache, while the lister always holds it already.
func (c *Controller) inventory(cluster string) *fleetfitv1alpha1.ClusterInventory {
	if c.inventories == nil {
		return nil
	}
	inv, err := c.inventories.ClusterInventories(cluster).Get(cluster)
	if err != nil {
		return nil
	}
	return inv
}

// inventoryHandler requeues the intents whose unschedulable pods a cluster's report changes, so
// that their deliveries say what the agent says of them.
func (c *Controller) inventoryHandler() toolscache.ResourceEventHandler {
	onReport := func(old, inv *fleetfitv1alpha1.ClusterInventory) {
		before, after := unschedulableByIntent(old), unschedulableByIntent(inv)
		for key, u := range after {
			if b, ok := before[key]; !ok || !equality.Semantic.DeepEqual(b, u) {
				c.enqueueLabelled(key)
			}
		}
		for key := range before {
			if _, ok := after[key]; !ok {
				c.enqueueLabelled(key)
			}
		}
	}
	return handler.Funcs[*fleetfitv1alpha1.ClusterInventory]{
		Add:    func(inv *fleetfitv1alpha1.ClusterInventory) { onReport(nil, inv) },
		Update: onReport,
		Delete: func(inv *fleetfitv1alpha1.ClusterInventory) { onReport(inv, nil) },
	}
}

// labelledIntent names an intent as its pods' labels do.
type labelledIntent struct{ namespace, labelValue string }

// unschedulableByIntent indexes the unschedulable workloads an agent's report lists; nil for
// a nil report or one that is not an agent's (cache.InventoryName).
func unschedulableByIntent(inv *fleetfitv1alpha1.ClusterInventory) map[labelledIntent]fleetfitv1alpha1.UnschedulableWorkload {
	if inv == nil || !cache.InventoryName(inv) {
		return nil
	}
	out := make(map[labelledIntent]fleetfitv1alpha1.UnschedulableWorkload, len(inv.Status.Unschedulable))
	for _, u := range inv.Status.Unschedulable {
		out[labelledIntent{u.IntentNamespace, u.IntentName}] = u
	}
	return out
}

// enqueueLabelled requeues the intents whose pods carry the label values of key.
func (c *Controller) enqueueLabelled(key labelledIntent) {
	intents, _ := c.intents.HPAIntents(key.namespace).List(labels.Everything())
	for _, in := range intents {
		if fleetfitv1alpha1.IntentLabelValue(in.Name) == key.labelValue {
			c.enqueue(in)
		}
	}
}
