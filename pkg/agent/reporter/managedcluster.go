package reporter

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
)

// OwnedResourcesAnnotation, on the ClusterInventory, lists the
// ManagedCluster status resources the agent wrote, comma-separated and
// sorted. It survives agent restarts, so the agent keeps updating its own
// keys and never takes over keys others wrote.
const OwnedResourcesAnnotation = "fleetfit.io/managed-cluster-resources"

// registrationResources are written by OCM's registration agent; fleetfit
// leaves them alone even when absent, so the two agents never fight.
var registrationResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// managedClusterWriter adds the cluster's other resources — extended ones
// such as nvidia.com/gpu above all — to ManagedCluster.status.capacity and
// allocatable. It patches only the keys it owns: those it wrote before, and
// those absent from both lists when it first writes them.
type managedClusterWriter struct {
	client  clusterclient.Interface
	hub     fleetfitclient.Interface
	cluster string
	// inventory is told of the ClusterInventory's new version after the
	// annotation changes, so its next status update does not conflict.
	inventory *inventoryWriter

	// applied are the report's resource totals as of the last sync that left
	// the ManagedCluster right, at appliedAt. Only they decide what is
	// written, so while they stay the same the ManagedCluster is not read
	// again until reread has passed (to notice keys someone else changed).
	applied   []v1alpha1.ResourceTotals
	appliedAt time.Time
	reread    time.Duration
}

func newManagedClusterWriter(client clusterclient.Interface, hub fleetfitclient.Interface, inventory *inventoryWriter, opts Options) *managedClusterWriter {
	return &managedClusterWriter{client: client, hub: hub, cluster: opts.ClusterName, inventory: inventory, reread: opts.ScoreValidity / 2}
}

func (w *managedClusterWriter) name() string { return "ManagedCluster" }

func (w *managedClusterWriter) sync(ctx context.Context, st *syncState) error {
	if st.inventory == nil {
		// Ownership is recorded on the ClusterInventory; without it, wait
		// for the retry that the inventory step's error causes.
		return nil
	}
	if w.applied != nil && st.now.Sub(w.appliedAt) < w.reread && apiequality.Semantic.DeepEqual(w.applied, st.report.Resources) {
		return nil
	}
	if err := w.apply(ctx, st); err != nil {
		w.applied = nil
		return err
	}
	w.applied, w.appliedAt = st.report.Resources, st.now
	return nil
}

// apply reads the ManagedCluster and patches the keys fleetfit owns when
// they differ from the report.
func (w *managedClusterWriter) apply(ctx context.Context, st *syncState) error {
	mc, err := w.client.ClusterV1().ManagedClusters().Get(ctx, w.cluster, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading ManagedCluster %s: %w", w.cluster, err)
	}
	owned := parseOwned(st.inventory.Annotations[OwnedResourcesAnnotation])
	capacity, allocatable := map[string]any{}, map[string]any{}
	var keep []string
	for _, t := range st.report.Resources {
		name := string(t.Name)
		if slices.Contains(registrationResources, t.Name) {
			continue
		}
		_, inCap := mc.Status.Capacity[clusterv1.ResourceName(name)]
		_, inAlloc := mc.Status.Allocatable[clusterv1.ResourceName(name)]
		if !slices.Contains(owned, name) && (inCap || inAlloc) {
			continue // someone else's
		}
		keep = append(keep, name)
		capacity[name] = t.Capacity.String()
		allocatable[name] = t.Allocatable.String()
	}
	// Keys the agent wrote for resources the cluster no longer has are
	// removed (null in a merge patch).
	for _, name := range owned {
		if !slices.Contains(keep, name) {
			capacity[name], allocatable[name] = nil, nil
		}
	}
	if len(capacity) == 0 || unchanged(mc, capacity, allocatable) {
		return w.recordOwned(ctx, st, keep)
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"capacity": capacity, "allocatable": allocatable}})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	// Ownership is recorded first, including keys about to be removed, so a
	// crash between the two writes never loses track of a key we wrote.
	if err := w.recordOwned(ctx, st, union(keep, owned)); err != nil {
		return err
	}
	if _, err := w.client.ClusterV1().ManagedClusters().Patch(ctx, w.cluster, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patching status of ManagedCluster %s: %w", w.cluster, err)
	}
	klog.FromContext(ctx).V(logLevelWrites).Info("Patched ManagedCluster status", "patch", string(patch))
	return w.recordOwned(ctx, st, keep)
}

// unchanged reports whether mc already holds the patch's values.
func unchanged(mc *clusterv1.ManagedCluster, capacity, allocatable map[string]any) bool {
	same := func(list clusterv1.ResourceList, want map[string]any) bool {
		for name, v := range want {
			q, ok := list[clusterv1.ResourceName(name)]
			if v == nil {
				if ok {
					return false
				}
				continue
			}
			if !ok || q.String() != v.(string) {
				return false
			}
		}
		return true
	}
	return same(mc.Status.Capacity, capacity) && same(mc.Status.Allocatable, allocatable)
}

func (w *managedClusterWriter) recordOwned(ctx context.Context, st *syncState, names []string) error {
	slices.Sort(names)
	value := strings.Join(names, ",")
	if st.inventory.Annotations[OwnedResourcesAnnotation] == value {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{OwnedResourcesAnnotation: value}}})
	if err != nil {
		return fmt.Errorf("encoding patch: %w", err)
	}
	inv, err := w.hub.FleetfitV1alpha1().ClusterInventories(w.cluster).Patch(ctx, w.cluster, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("recording owned resources on ClusterInventory %s/%s: %w", w.cluster, w.cluster, err)
	}
	st.inventory = inv
	w.inventory.last = inv
	return nil
}

func parseOwned(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func union(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}
