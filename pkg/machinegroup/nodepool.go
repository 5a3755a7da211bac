package machinegroup

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// NotReadyTaintKeys are the node taints that make a pool node NotReady: the
// ones the node lifecycle controller and kubectl cordon set on a node that
// must not take new pods.
var NotReadyTaintKeys = []string{
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnschedulable,
	corev1.TaintNodeNetworkUnavailable,
	corev1.TaintNodeUnreachable,
}

// Health is the condition of a pool node whose entry has mode; node is nil
// when the Node does not exist. A node that is missing or carries one of
// NotReadyTaintKeys is NotReady whatever its mode, so that a node in
// maintenance that is also down says so; otherwise an entry in maintenance
// mode is Maintenance, and the rest is Ready.
func Health(mode v1alpha1.NodePoolMode, node *corev1.Node) v1alpha1.NodeHealth {
	if node == nil {
		return v1alpha1.NodeHealthNotReady
	}
	for _, t := range node.Spec.Taints {
		if slices.Contains(NotReadyTaintKeys, t.Key) {
			return v1alpha1.NodeHealthNotReady
		}
	}
	if mode == v1alpha1.NodePoolModeMaintenance {
		return v1alpha1.NodeHealthMaintenance
	}
	return v1alpha1.NodeHealthReady
}

// NodeState is what a group puts on one of its pool nodes: labels, annotations
// and taints, each added to what others put there. The zero NodeState is what
// a node outside every pool carries from machine groups: nothing.
type NodeState struct {
	Labels      map[string]string
	Annotations map[string]string
	// Taints are in a fixed order: the machine type's, then the node pool's.
	Taints []corev1.Taint
}

// DesiredNodeState is what group puts on the node of entry, whose health is h:
// the group annotation, the `<machine type>=<group>` label, the node-pool=ready
// label only while h is Ready, and with taint: true the machine type's and the
// node pool's NoSchedule taints, the latter valued with h.
func DesiredNodeState(group string, entry *v1alpha1.NodePoolEntry, h v1alpha1.NodeHealth) NodeState {
	s := NodeState{
		Labels:      map[string]string{},
		Annotations: map[string]string{AnnotationMachineGroup: group},
	}
	machineType := EntryMachineType(entry)
	if machineType != "" {
		s.Labels[MachineTypeKey(machineType)] = group
	}
	if h == v1alpha1.NodeHealthReady {
		s.Labels[LabelNodePool] = NodePoolReady
	}
	if entry.Taint && machineType != "" {
		s.Taints = NodeTaints(group, machineType, h)
	}
	return s
}

// EntryMachineType is the machine type of a pool entry (admission allows
// exactly one), or "" when it has none.
func EntryMachineType(entry *v1alpha1.NodePoolEntry) string {
	if len(entry.MachineType) == 0 {
		return ""
	}
	return entry.MachineType[0].Name
}

// IsNodePoolTaint says whether a node taint is one that machine groups set:
// every NoSchedule taint whose key has Prefix. The prefix is machine groups'
// own, so the node pool controller may replace or remove such a taint; a taint
// under another key is never touched.
func IsNodePoolTaint(t corev1.Taint) bool {
	return strings.HasPrefix(t.Key, Prefix) && t.Effect == corev1.TaintEffectNoSchedule
}

// MergeTaints returns the taints of a node that carries current once its
// machine-group taints are want: every other taint is kept in its place, and
// the machine-group taints follow them. changed is false, and current is
// returned as it is, when its machine-group taints already are want in any
// order (TimeAdded aside).
func MergeTaints(current, want []corev1.Taint) (merged []corev1.Taint, changed bool) {
	var ours []corev1.Taint
	for _, t := range current {
		if IsNodePoolTaint(t) {
			ours = append(ours, t)
		} else {
			merged = append(merged, t)
		}
	}
	if sameTaints(ours, want) {
		return current, false
	}
	return append(merged, want...), true
}

// sameTaints compares two lists of taints as sets of key, value and effect.
func sameTaints(a, b []corev1.Taint) bool {
	if len(a) != len(b) {
		return false
	}
	for _, t := range a {
		if !slices.ContainsFunc(b, func(u corev1.Taint) bool { return t.MatchTaint(&u) && t.Value == u.Value }) {
			return false
		}
	}
	return true
}

// FindEntry returns the entry of a node in a pool, or nil.
func FindEntry(pool []v1alpha1.NodePoolEntry, node string) *v1alpha1.NodePoolEntry {
	for i := range pool {
		if pool[i].Name == node {
			return &pool[i]
		}
	}
	return nil
}

// NodeOwner returns, of groups whose pools name one node, the one the node
// belongs to: a node is in one group only, the one created first (ties broken
// by name), so that which group wins does not depend on the order in which
// the controller sees them. Groups being deleted own nothing. It returns nil
// when no group is left.
func NodeOwner(groups []*v1alpha1.MachineGroup) *v1alpha1.MachineGroup {
	var owner *v1alpha1.MachineGroup
	for _, g := range groups {
		if g.DeletionTimestamp != nil {
			continue
		}
		if owner == nil || createdBefore(g, owner) {
			owner = g
		}
	}
	return owner
}

func createdBefore(a, b *v1alpha1.MachineGroup) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
