package testing

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// MakeInventory returns the ClusterInventory the fleetfit agent of cluster writes for nodes and
// pods, observed at observedAt: named after the cluster, in the cluster's namespace, with the
// status InventoryStatus computes.
func MakeInventory(cluster string, observedAt time.Time, nodes []*corev1.Node, pods ...*corev1.Pod) *v1alpha1.ClusterInventory {
	inv := &v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: cluster}}
	inv.Status = InventoryStatus(nodes, pods...)
	inv.Status.ObservedAt = metav1.NewTime(observedAt)
	return inv
}

// InventoryStatus summarises nodes and pods with pkg/inventory and its default configuration,
// the code the agent runs, so that hub tests read the reports real agents write rather than
// hand-written ones. It leaves observedAt, revision and agentVersion unset.
func InventoryStatus(nodes []*corev1.Node, pods ...*corev1.Pod) v1alpha1.ClusterInventoryStatus {
	c, err := inventory.NewCluster(inventory.DefaultConfig())
	if err != nil {
		// The default configuration is valid; failing here is a bug in pkg/inventory.
		panic(fmt.Sprintf("default inventory config: %v", err))
	}
	for _, n := range nodes {
		c.UpsertNode(n)
	}
	for _, p := range pods {
		c.UpsertPod(p)
	}
	return c.Summarize()
}
