package nodepool

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

// ConditionReady is the MachineNodePool's condition that says whether every
// node of the pool carries what the pool says. The machine controller mirrors
// it into its MachineGroup's Ready condition.
const ConditionReady = "Ready"

// Reasons of the Ready condition, in the order they take precedence when
// several apply; the message then names every problem.
const (
	// ReasonNodeInOtherGroup: a node of the pool belongs to a group created
	// earlier; nothing is set on it for this group.
	ReasonNodeInOtherGroup = "NodeInOtherGroup"
	// ReasonNodeNotFound: a node of the pool does not exist.
	ReasonNodeNotFound = "NodeNotFound"
	// ReasonNodesPending: a node does not carry yet what the pool says; the
	// controller is writing it.
	ReasonNodesPending = "NodesPending"
	// ReasonNodesLabelled: every node carries what the pool says.
	ReasonNodesLabelled = "NodesLabelled"
)

// maxNodesInMessage bounds how many nodes a condition message names.
const maxNodesInMessage = 10

// syncPool keeps a group's MachineNodePool a copy of the group's pool and its
// status current. A group that is gone or being deleted has nothing to sync:
// its pool goes with it through its owner reference, and its nodes are
// cleaned by their own syncs.
func (c *Controller) syncPool(ctx context.Context, name string) error {
	group, err := c.groups.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if group.DeletionTimestamp != nil {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("machineGroup", klog.KObj(group))
	ctx = klog.NewContext(ctx, logger)

	pool, err := c.writePoolSpec(ctx, group)
	if err != nil || pool == nil {
		return err
	}
	status := c.poolStatus(group, pool)
	if equality.Semantic.DeepEqual(status, pool.Status) {
		return nil
	}
	pool = pool.DeepCopy()
	pool.Status = status
	if _, err := c.client.FleetfitV1alpha1().MachineNodePools().UpdateStatus(ctx, pool, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		if apierrors.IsConflict(err) {
			// The cache is behind the pool, typically our own last write:
			// the pool's update event, on its way, syncs the group again.
			logger.V(logs.Debug).Info("Node pool changed meanwhile, waiting for the cache", "machineNodePool", klog.KObj(pool))
			return nil
		}
		return fmt.Errorf("writing the status of MachineNodePool %s: %w", pool.Name, err)
	}
	ready := meta.FindStatusCondition(status.Conditions, ConditionReady)
	logger.V(logs.Changes).Info("Wrote node pool status", "ready", ready.Status, "reason", ready.Reason)
	return nil
}

// desiredPool is the MachineNodePool of group: labelled with the group,
// controlled by it, and a copy of its pool and of its machine types' names.
func desiredPool(group *v1alpha1.MachineGroup) *v1alpha1.MachineNodePool {
	stock := make([]v1alpha1.MachineTypeRef, 0, len(group.Spec.MachineTypes))
	for _, t := range group.Spec.MachineTypes {
		stock = append(stock, v1alpha1.MachineTypeRef{Name: t.Name})
	}
	var entries []v1alpha1.NodePoolEntry
	for _, e := range group.Spec.NodePools {
		entries = append(entries, *e.DeepCopy())
	}
	return &v1alpha1.MachineNodePool{
		ObjectMeta: metav1.ObjectMeta{
			Name:            machinegroup.NodePoolName(group.Name),
			Labels:          map[string]string{machinegroup.LabelMachineGroup: group.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(group, v1alpha1.SchemeGroupVersion.WithKind("MachineGroup"))},
		},
		Spec: v1alpha1.MachineNodePoolSpec{
			MachineGroup:     group.Name,
			NodePool:         entries,
			MachineTypeStock: stock,
		},
	}
}

// writePoolSpec creates the group's MachineNodePool or updates it where it
// differs from desiredPool, keeping labels and owner references others added.
// It returns the pool as it is now, or nil and no error when the pool changed
// since the cache saw it: the pool's next event syncs the group again.
func (c *Controller) writePoolSpec(ctx context.Context, group *v1alpha1.MachineGroup) (*v1alpha1.MachineNodePool, error) {
	want := desiredPool(group)
	pools := c.client.FleetfitV1alpha1().MachineNodePools()
	cur, err := c.pools.Get(want.Name)
	if apierrors.IsNotFound(err) {
		// When the cache is behind and the pool exists, creating fails and
		// the retry finds the pool in the cache.
		created, err := pools.Create(ctx, want, metav1.CreateOptions{FieldManager: FieldManager})
		if err != nil {
			return nil, fmt.Errorf("creating MachineNodePool %s: %w", want.Name, err)
		}
		klog.FromContext(ctx).V(logs.Changes).Info("Created node pool", "machineNodePool", klog.KObj(created))
		return created, nil
	}
	if err != nil {
		return nil, err
	}

	update := cur.DeepCopy()
	if update.Labels == nil {
		update.Labels = map[string]string{}
	}
	maps.Copy(update.Labels, want.Labels)
	if ref := metav1.GetControllerOfNoCopy(cur); ref == nil || ref.UID != group.UID {
		update.OwnerReferences = withController(update.OwnerReferences, want.OwnerReferences[0])
	}
	update.Spec = want.Spec
	if equality.Semantic.DeepEqual(update.ObjectMeta, cur.ObjectMeta) && equality.Semantic.DeepEqual(update.Spec, cur.Spec) {
		return cur, nil
	}
	written, err := pools.Update(ctx, update, metav1.UpdateOptions{FieldManager: FieldManager})
	if apierrors.IsConflict(err) {
		// As for the status: the pool's update event syncs the group again.
		klog.FromContext(ctx).V(logs.Debug).Info("Node pool changed meanwhile, waiting for the cache", "machineNodePool", klog.KObj(cur))
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("updating MachineNodePool %s: %w", want.Name, err)
	}
	klog.FromContext(ctx).V(logs.Changes).Info("Updated node pool", "machineNodePool", klog.KObj(written))
	return written, nil
}

// withController returns refs with ref as the only controller: a pool left by
// an earlier group of the same name, which the garbage collector has not
// removed yet, is taken over. Other owners are kept.
func withController(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	out := []metav1.OwnerReference{ref}
	for _, r := range refs {
		if r.UID == ref.UID || r.Controller != nil && *r.Controller {
			continue
		}
		out = append(out, r)
	}
	return out
}

// poolStatus is the status of group's pool: each node's health, in the
// order of the pool, and the Ready condition.
func (c *Controller) poolStatus(group *v1alpha1.MachineGroup, pool *v1alpha1.MachineNodePool) v1alpha1.MachineNodePoolStatus {
	status := v1alpha1.MachineNodePoolStatus{
		ObservedGeneration: pool.Generation,
		Conditions:         append([]metav1.Condition(nil), pool.Status.Conditions...),
	}
	var others, missing, pending []string
	for i := range pool.Spec.NodePool {
		entry := &pool.Spec.NodePool[i]
		node, err := c.nodes.Get(entry.Name)
		if err != nil {
			node = nil
		}
		health := machinegroup.Health(entry.Mode, node)
		status.NodePool = append(status.NodePool, v1alpha1.NodePoolNodeStatus{Name: entry.Name, Condition: health})
		switch owner := machinegroup.NodeOwner(c.groupsNaming(entry.Name)); {
		case owner != nil && owner.Name != group.Name:
			others = append(others, fmt.Sprintf("node %s is in machine group %s", entry.Name, owner.Name))
		case node == nil:
			missing = append(missing, entry.Name)
		case !carries(node, machinegroup.DesiredNodeState(group.Name, entry, health)):
			pending = append(pending, entry.Name)
		}
	}
	// Every problem is in the message; the first one gives the reason.
	cond := metav1.Condition{Type: ConditionReady, ObservedGeneration: pool.Generation, Status: metav1.ConditionFalse}
	var problems []string
	if len(others) > 0 {
		cond.Reason = ReasonNodeInOtherGroup
		problems = append(problems, fmt.Sprintf("A node belongs to one machine group, the one created first: %s, so nothing is set on it for %s; remove it from one of the groups",
			join(others), group.Name))
	}
	if len(missing) > 0 {
		cond.Reason = cmp.Or(cond.Reason, ReasonNodeNotFound)
		problems = append(problems, fmt.Sprintf("Nodes not found: %s; they are NotReady until they exist", join(missing)))
	}
	if len(pending) > 0 {
		cond.Reason = cmp.Or(cond.Reason, ReasonNodesPending)
		problems = append(problems, fmt.Sprintf("Labelling nodes: %s", join(pending)))
	}
	cond.Message = strings.Join(problems, ". ")
	if len(problems) == 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, ReasonNodesLabelled, readyMessage(status.NodePool)
	}
	cond.LastTransitionTime = metav1.NewTime(c.clock.Now())
	meta.SetStatusCondition(&status.Conditions, cond)
	return status
}

// carries says whether a node has the labels, annotations and taints of want.
// Machine-group taints beyond want's are left to the node's sync too.
func carries(node *corev1.Node, want machinegroup.NodeState) bool {
	if !hasAll(node.Labels, want.Labels) || !hasAll(node.Annotations, want.Annotations) {
		return false
	}
	_, changed := machinegroup.MergeTaints(node.Spec.Taints, want.Taints)
	return !changed
}

// readyMessage counts the pool's nodes by health.
func readyMessage(nodes []v1alpha1.NodePoolNodeStatus) string {
	if len(nodes) == 0 {
		return "The pool has no nodes"
	}
	count := map[v1alpha1.NodeHealth]int{}
	for _, n := range nodes {
		count[n.Condition]++
	}
	var parts []string
	for _, h := range []v1alpha1.NodeHealth{v1alpha1.NodeHealthReady, v1alpha1.NodeHealthNotReady, v1alpha1.NodeHealthMaintenance} {
		if count[h] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[h], h))
		}
	}
	if len(nodes) == 1 {
		return "The node is labelled: " + strings.Join(parts, ", ")
	}
	return fmt.Sprintf("All %d nodes are labelled: %s", len(nodes), strings.Join(parts, ", "))
}

func join(items []string) string {
	return textcap.Join(items, ", ", maxNodesInMessage, textcap.MaxMessage)
}
