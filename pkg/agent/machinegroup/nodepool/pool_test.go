package nodepool

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitlisters "github.com/fleetfit/fleetfit/pkg/generated/listers/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func group(name string, created time.Time, entries ...v1alpha1.NodePoolEntry) *v1alpha1.MachineGroup {
	w := utiltesting.MakeMachineGroup(name).UID(types.UID("uid-" + name)).Created(created).NodePool(entries...)
	for _, e := range entries {
		t := machinegroup.EntryMachineType(&e)
		if !hasType(&w.MachineGroup, t) {
			w.MachineType(utiltesting.MakeGroupMachineType(t, "1", "1Gi").Obj())
		}
	}
	return w.Obj()
}

func hasType(g *v1alpha1.MachineGroup, name string) bool {
	_, err := machinegroup.FindType(g, name)
	return err == nil
}

func poolEntry(node, machineType string, mode v1alpha1.NodePoolMode, taint bool) v1alpha1.NodePoolEntry {
	return v1alpha1.NodePoolEntry{Name: node, Mode: mode, Taint: taint, MachineType: []v1alpha1.MachineTypeRef{{Name: machineType}}}
}

// labelled is a node carrying what group puts on it for entry in health h.
func labelled(n *corev1.Node, group string, entry v1alpha1.NodePoolEntry, h v1alpha1.NodeHealth) *corev1.Node {
	want := machinegroup.DesiredNodeState(group, &entry, h)
	n.Labels = want.Labels
	n.Annotations = want.Annotations
	n.Spec.Taints = append(n.Spec.Taints, want.Taints...)
	return n
}

// cachedController is a controller whose listers hold groups and nodes, as
// its informers would.
func cachedController(t *testing.T, groups []*v1alpha1.MachineGroup, nodes []*corev1.Node) *Controller {
	t.Helper()
	gi := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{byPoolNode: machinegroup.PoolNodeIndex})
	ni := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{byGroupAnnotation: groupAnnotationIndex})
	for _, g := range groups {
		if err := gi.Add(g); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if err := ni.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return &Controller{
		clock:        clocktesting.NewFakeClock(t0.Add(time.Hour)),
		groups:       fleetfitlisters.NewMachineGroupLister(gi),
		groupIndexer: gi,
		nodes:        corelisters.NewNodeLister(ni),
		nodeIndexer:  ni,
	}
}

func TestPoolStatus(t *testing.T) {
	readyEntry := poolEntry("a", "small", v1alpha1.NodePoolModeReady, true)
	maintEntry := poolEntry("b", "small", v1alpha1.NodePoolModeMaintenance, false)
	now := metav1.NewTime(t0.Add(time.Hour))
	cases := map[string]struct {
		groups []*v1alpha1.MachineGroup
		nodes  []*corev1.Node
		want   v1alpha1.MachineNodePoolStatus
	}{
		"every node labelled": {
			groups: []*v1alpha1.MachineGroup{group("g", t0, readyEntry, maintEntry)},
			nodes: []*corev1.Node{
				labelled(utiltesting.MakeNode("a").Obj(), "g", readyEntry, v1alpha1.NodeHealthReady),
				labelled(utiltesting.MakeNode("b").Obj(), "g", maintEntry, v1alpha1.NodeHealthMaintenance),
			},
			want: v1alpha1.MachineNodePoolStatus{
				ObservedGeneration: 3,
				NodePool: []v1alpha1.NodePoolNodeStatus{
					{Name: "a", Condition: v1alpha1.NodeHealthReady},
					{Name: "b", Condition: v1alpha1.NodeHealthMaintenance},
				},
				Conditions: []metav1.Condition{{
					Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonNodesLabelled, ObservedGeneration: 3,
					Message: "All 2 nodes are labelled: 1 Ready, 1 Maintenance", LastTransitionTime: now,
				}},
			},
		},
		"node not labelled yet": {
			groups: []*v1alpha1.MachineGroup{group("g", t0, readyEntry)},
			nodes:  []*corev1.Node{utiltesting.MakeNode("a").Obj()},
			want: v1alpha1.MachineNodePoolStatus{
				ObservedGeneration: 3,
				NodePool:           []v1alpha1.NodePoolNodeStatus{{Name: "a", Condition: v1alpha1.NodeHealthReady}},
				Conditions: []metav1.Condition{{
					Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNodesPending, ObservedGeneration: 3,
					Message: "Labelling nodes: a", LastTransitionTime: now,
				}},
			},
		},
		"missing node": {
			groups: []*v1alpha1.MachineGroup{group("g", t0, readyEntry)},
			want: v1alpha1.MachineNodePoolStatus{
				ObservedGeneration: 3,
				NodePool:           []v1alpha1.NodePoolNodeStatus{{Name: "a", Condition: v1alpha1.NodeHealthNotReady}},
				Conditions: []metav1.Condition{{
					Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNodeNotFound, ObservedGeneration: 3,
					Message: "Nodes not found: a; they are NotReady until they exist", LastTransitionTime: now,
				}},
			},
		},
		"node of an earlier group": {
			groups: []*v1alpha1.MachineGroup{
				group("g", t0.Add(time.Minute), readyEntry),
				group("earlier", t0, poolEntry("a", "big", v1alpha1.NodePoolModeReady, false)),
			},
			nodes: []*corev1.Node{labelled(utiltesting.MakeNode("a").Obj(), "earlier", poolEntry("a", "big", v1alpha1.NodePoolModeReady, false), v1alpha1.NodeHealthReady)},
			want: v1alpha1.MachineNodePoolStatus{
				ObservedGeneration: 3,
				NodePool:           []v1alpha1.NodePoolNodeStatus{{Name: "a", Condition: v1alpha1.NodeHealthReady}},
				Conditions: []metav1.Condition{{
					Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNodeInOtherGroup, ObservedGeneration: 3,
					Message: "A node belongs to one machine group, the one created first: node a is in machine group earlier, " +
						"so nothing is set on it for g; remove it from one of the groups",
					LastTransitionTime: now,
				}},
			},
		},
		"every problem named": {
			groups: []*v1alpha1.MachineGroup{
				group("g", t0.Add(time.Minute), readyEntry, maintEntry),
				group("earlier", t0, poolEntry("a", "big", v1alpha1.NodePoolModeReady, false)),
			},
			want: v1alpha1.MachineNodePoolStatus{
				ObservedGeneration: 3,
				NodePool: []v1alpha1.NodePoolNodeStatus{
					{Name: "a", Condition: v1alpha1.NodeHealthNotReady},
					{Name: "b", Condition: v1alpha1.NodeHealthNotReady},
				},
				Conditions: []metav1.Condition{{
					Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonNodeInOtherGroup, ObservedGeneration: 3,
					Message: "A node belongs to one machine group, the one created first: node a is in machine group earlier, " +
						"so nothing is set on it for g; remove it from one of the groups. Nodes not found: b; they are NotReady until they exist",
					LastTransitionTime: now,
				}},
			},
		},
		"not-ready node with its taints": {
			groups: []*v1alpha1.MachineGroup{group("g", t0, readyEntry)},
			nodes: []*corev1.Node{labelled(
				utiltesting.MakeNode("a").Taint(corev1.TaintNodeUnreachable, "", corev1.TaintEffectNoExecute).Obj(),
				"g", readyEntry, v1alpha1.NodeHealthNotReady)},
			want: v1alpha1.MachineNodePoolStatus{
				ObservedGeneration: 3,
				NodePool:           []v1alpha1.NodePoolNodeStatus{{Name: "a", Condition: v1alpha1.NodeHealthNotReady}},
				Conditions: []metav1.Condition{{
					Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonNodesLabelled, ObservedGeneration: 3,
					Message: "The node is labelled: 1 NotReady", LastTransitionTime: now,
				}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := cachedController(t, tc.groups, tc.nodes)
			pool := desiredPool(tc.groups[0])
			pool.Generation = 3
			got := c.poolStatus(tc.groups[0], pool)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("status (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestDesiredPool(t *testing.T) {
	g := group("general", t0, poolEntry("a", "small", v1alpha1.NodePoolModeReady, true), poolEntry("b", "large", v1alpha1.NodePoolModeMaintenance, false))
	got := desiredPool(g)
	want := &v1alpha1.MachineNodePool{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "general-node-pool",
			Labels: map[string]string{machinegroup.LabelMachineGroup: "general"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "fleetfit.io/v1alpha1", Kind: "MachineGroup", Name: "general", UID: "uid-general",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1alpha1.MachineNodePoolSpec{
			MachineGroup:     "general",
			NodePool:         g.Spec.NodePools,
			MachineTypeStock: []v1alpha1.MachineTypeRef{{Name: "small"}, {Name: "large"}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pool (-want,+got):\n%s", diff)
	}
}

func TestWithController(t *testing.T) {
	mine := metav1.OwnerReference{Kind: "MachineGroup", Name: "g", UID: "new", Controller: ptr.To(true)}
	stale := metav1.OwnerReference{Kind: "MachineGroup", Name: "g", UID: "old", Controller: ptr.To(true)}
	other := metav1.OwnerReference{Kind: "ConfigMap", Name: "x", UID: "cm"}
	cases := map[string]struct {
		refs, want []metav1.OwnerReference
	}{
		"none":                    {want: []metav1.OwnerReference{mine}},
		"replaces a stale group":  {refs: []metav1.OwnerReference{other, stale}, want: []metav1.OwnerReference{mine, other}},
		"keeps other owners once": {refs: []metav1.OwnerReference{mine, other}, want: []metav1.OwnerReference{mine, other}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, withController(tc.refs, mine)); diff != "" {
				t.Errorf("owner references (-want,+got):\n%s", diff)
			}
		})
	}
}
