package nodepool

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// syncNode puts on a node what its owning group wants there now, and takes
// away what the controller put there before and no longer wants — all of it
// when no live group names the node.
//
// The writes are ordered so that a node never carries machine-group taints
// without the annotation that brings it back to the controller after a
// restart: on the way in the annotation and labels come first, on the way
// out the taints go first.
func (c *Controller) syncNode(ctx context.Context, name string) error {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx).WithValues("node", klog.KObj(node))
	ctx = klog.NewContext(ctx, logger)

	want := c.desiredState(node)
	if len(want.Annotations) == 0 {
		if node, err = c.writeTaints(ctx, node, want.Taints); err != nil {
			return err
		}
		_, err = c.applyMetadata(ctx, node, want)
		return err
	}
	if node, err = c.applyMetadata(ctx, node, want); err != nil {
		return err
	}
	_, err = c.writeTaints(ctx, node, want.Taints)
	return err
}

// desiredState is what the node's owner wants on it; the zero state when no
// live group names it.
func (c *Controller) desiredState(node *corev1.Node) machinegroup.NodeState {
	owner := machinegroup.NodeOwner(c.groupsNaming(node.Name))
	if owner == nil {
		return machinegroup.NodeState{}
	}
	entry := machinegroup.FindEntry(owner.Spec.NodePools, node.Name)
	if entry == nil {
		// The index and the group disagree only for a moment; the group's
		// next event syncs the node again.
		return machinegroup.NodeState{}
	}
	return machinegroup.DesiredNodeState(owner.Name, entry, machinegroup.Health(entry.Mode, node))
}

// applyMetadata applies want's labels and annotations as the controller's
// field manager, unless that is what the manager already owns. Applying the
// whole set removes the labels and annotations the manager owned and no
// longer wants, and none that another manager set. The node's UID makes the
// apply fail rather than create a node deleted meanwhile. It returns the node
// as written, or as it was when nothing needed writing.
func (c *Controller) applyMetadata(ctx context.Context, node *corev1.Node, want machinegroup.NodeState) (*corev1.Node, error) {
	owned, err := corev1ac.ExtractNode(node, FieldManager)
	if err != nil {
		return nil, fmt.Errorf("reading the fields %s owns on node %s: %w", FieldManager, node.Name, err)
	}
	if maps.Equal(owned.Labels, want.Labels) && maps.Equal(owned.Annotations, want.Annotations) &&
		hasAll(node.Labels, want.Labels) && hasAll(node.Annotations, want.Annotations) {
		return node, nil
	}
	ac := corev1ac.Node(node.Name).WithUID(node.UID).WithLabels(want.Labels).WithAnnotations(want.Annotations)
	written, err := c.kube.CoreV1().Nodes().Apply(ctx, ac, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return node, nil
		}
		// A conflict is a node deleted (and maybe created again) since the
		// cache saw it: the retry reads the cache again.
		return nil, fmt.Errorf("applying labels and annotations to node %s: %w", node.Name, err)
	}
	klog.FromContext(ctx).V(logs.Changes).Info("Applied node labels and annotations", "labels", want.Labels, "annotations", want.Annotations)
	return written, nil
}

// hasAll says whether m has every entry of want.
func hasAll(m, want map[string]string) bool {
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// writeTaints makes the node's machine-group taints want, keeping every other
// taint, with the node's resourceVersion so that a taint someone else adds
// meanwhile is not lost: on a conflict it reads the node again and retries.
// It returns the node as written, or as it was when nothing needed writing.
func (c *Controller) writeTaints(ctx context.Context, node *corev1.Node, want []corev1.Taint) (*corev1.Node, error) {
	cur := node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		merged, changed := machinegroup.MergeTaints(cur.Spec.Taints, want)
		if !changed {
			return nil
		}
		update := cur.DeepCopy()
		update.Spec.Taints = merged
		written, err := c.kube.CoreV1().Nodes().Update(ctx, update, metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) {
			fresh, getErr := c.kube.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
			if getErr != nil {
				return getErr
			}
			cur = fresh
			return err
		}
		if err != nil {
			return err
		}
		klog.FromContext(ctx).V(logs.Changes).Info("Wrote node taints", "taints", want)
		cur = written
		return nil
	})
	if apierrors.IsNotFound(err) {
		return cur, nil
	}
	if err != nil {
		return nil, fmt.Errorf("writing the taints of node %s: %w", node.Name, err)
	}
	return cur, nil
}
