package machinegroup

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/nodepool"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/test/framework"
)

// quietPeriod is how long a test watches that something does not happen,
// after a barrier showed that the controller saw the change.
const quietPeriod = 2 * time.Second

const (
	ready       = v1alpha1.NodePoolModeReady
	maintenance = v1alpha1.NodePoolModeMaintenance
)

// foreign is what someone else put on a node; the controller must keep it.
var (
	foreignTaint      = corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	foreignLabels     = map[string]string{"team": "ml"}
	foreignAnnotation = map[string]string{"owner": "ops"}
)

func foreignNode(name string) *corev1.Node {
	n := readyNode(name).Label("team", "ml").Taint(foreignTaint.Key, foreignTaint.Value, foreignTaint.Effect).Obj()
	n.Annotations = map[string]string{"owner": "ops"}
	return n
}

func TestNodePoolLabelsNodesAndCleansThem(t *testing.T) {
	startNodePool(t)
	createNode(t, foreignNode("np-a"))
	createNode(t, readyNode("np-b").Obj())
	group := createGroup(t, makeGroup("np-general", "compute-xlarge", "compute-medium").
		Node("np-a", "compute-xlarge", ready, true).
		Node("np-b", "compute-medium", maintenance, false).Obj())

	pool := waitPool(t, "np-general", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-a", Condition: v1alpha1.NodeHealthReady},
		{Name: "np-b", Condition: v1alpha1.NodeHealthMaintenance},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))
	wantSpec := v1alpha1.MachineNodePoolSpec{
		MachineGroup:     "np-general",
		NodePool:         group.Spec.NodePools,
		MachineTypeStock: []v1alpha1.MachineTypeRef{{Name: "compute-xlarge"}, {Name: "compute-medium"}},
	}
	if diff := cmp.Diff(wantSpec, pool.Spec); diff != "" {
		t.Errorf("pool spec (-want,+got):\n%s", diff)
	}
	if ref := metav1.GetControllerOf(pool); ref == nil || ref.UID != group.UID || ref.Kind != "MachineGroup" {
		t.Errorf("pool controller reference %+v, want the MachineGroup %s", ref, group.UID)
	}
	if got := pool.Labels[machinegroup.LabelMachineGroup]; got != "np-general" {
		t.Errorf("pool label %s = %q, want np-general", machinegroup.LabelMachineGroup, got)
	}
	if c := meta.FindStatusCondition(pool.Status.Conditions, nodepool.ConditionReady); c != nil && c.Message != "All 2 nodes are labelled: 1 Ready, 1 Maintenance" {
		t.Errorf("Ready message %q", c.Message)
	}

	groupAnnotation := map[string]string{machinegroup.AnnotationMachineGroup: "np-general"}
	waitNode(t, "np-a", nodeCarries{
		labels:      merge(foreignLabels, map[string]string{"machines.fleetfit.io/compute-xlarge": "np-general", "machines.fleetfit.io/node-pool": "ready"}),
		annotations: merge(foreignAnnotation, groupAnnotation),
		taints: []corev1.Taint{foreignTaint,
			noSchedule("machines.fleetfit.io/compute-xlarge", "np-general"),
			noSchedule("machines.fleetfit.io/node-pool", "ready")},
	})
	// The controller caches nodes without their status; its taint writes
	// must leave the status as the kubelet set it.
	if n, err := kube().CoreV1().Nodes().Get(t.Context(), "np-a", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if diff := cmp.Diff(foreignNode("np-a").Status, n.Status); diff != "" {
		t.Errorf("node status changed (-want,+got):\n%s", diff)
	}
	// In maintenance: the type label and the annotation, but no ready label.
	waitNode(t, "np-b", nodeCarries{
		labels:       map[string]string{"machines.fleetfit.io/compute-medium": "np-general"},
		annotations:  groupAnnotation,
		absentLabels: []string{machinegroup.LabelNodePool},
	})

	t.Log("Maintenance mode takes the ready label away and turns the pool taint to maintenance")
	updateGroup(t, "np-general", func(g *v1alpha1.MachineGroup) { g.Spec.NodePools[0].Mode = maintenance })
	waitNode(t, "np-a", nodeCarries{
		labels:       merge(foreignLabels, map[string]string{"machines.fleetfit.io/compute-xlarge": "np-general"}),
		absentLabels: []string{machinegroup.LabelNodePool},
		annotations:  merge(foreignAnnotation, groupAnnotation),
		taints: []corev1.Taint{foreignTaint,
			noSchedule("machines.fleetfit.io/compute-xlarge", "np-general"),
			noSchedule("machines.fleetfit.io/node-pool", "maintenance")},
	})
	updateGroup(t, "np-general", func(g *v1alpha1.MachineGroup) { g.Spec.NodePools[0].Mode = ready })
	waitNode(t, "np-a", nodeCarries{
		labels: map[string]string{"machines.fleetfit.io/node-pool": "ready"},
		taints: []corev1.Taint{foreignTaint,
			noSchedule("machines.fleetfit.io/compute-xlarge", "np-general"),
			noSchedule("machines.fleetfit.io/node-pool", "ready")},
	})

	t.Log("A cordoned node is NotReady and loses the ready label")
	updateNode(t, "np-a", func(n *corev1.Node) {
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	})
	waitPool(t, "np-general", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-a", Condition: v1alpha1.NodeHealthNotReady},
		{Name: "np-b", Condition: v1alpha1.NodeHealthMaintenance},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))
	waitNode(t, "np-a", nodeCarries{
		labels:       map[string]string{"machines.fleetfit.io/compute-xlarge": "np-general"},
		absentLabels: []string{machinegroup.LabelNodePool},
		taints: []corev1.Taint{foreignTaint,
			{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule},
			noSchedule("machines.fleetfit.io/compute-xlarge", "np-general"),
			noSchedule("machines.fleetfit.io/node-pool", "not-ready")},
	})
	updateNode(t, "np-a", func(n *corev1.Node) {
		n.Spec.Taints = removeTaint(n.Spec.Taints, corev1.TaintNodeUnschedulable)
	})

	t.Log("A node that leaves the pool loses what the group put there, and keeps what others did")
	updateGroup(t, "np-general", func(g *v1alpha1.MachineGroup) { g.Spec.NodePools = g.Spec.NodePools[1:] })
	waitNode(t, "np-a", nodeCarries{
		labels:            foreignLabels,
		absentLabels:      []string{"machines.fleetfit.io/compute-xlarge", machinegroup.LabelNodePool},
		annotations:       foreignAnnotation,
		absentAnnotations: []string{machinegroup.AnnotationMachineGroup},
		taints:            []corev1.Taint{foreignTaint},
	})
	waitPool(t, "np-general", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-b", Condition: v1alpha1.NodeHealthMaintenance},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))

	t.Log("Deleting the group cleans its nodes")
	deleteGroup(t, "np-general")
	waitNode(t, "np-b", nodeCarries{
		absentLabels:      []string{"machines.fleetfit.io/compute-medium", machinegroup.LabelNodePool},
		absentAnnotations: []string{machinegroup.AnnotationMachineGroup},
	})
}

func TestNodePoolNotReadyNode(t *testing.T) {
	startNodePool(t)
	createNode(t, readyNode("np-down").Taint(corev1.TaintNodeNotReady, "", corev1.TaintEffectNoExecute).Obj())
	createGroup(t, makeGroup("np-down", "small").Node("np-down", "small", ready, true).Obj())
	waitPool(t, "np-down", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-down", Condition: v1alpha1.NodeHealthNotReady},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))
	waitNode(t, "np-down", nodeCarries{
		labels:       map[string]string{"machines.fleetfit.io/small": "np-down"},
		absentLabels: []string{machinegroup.LabelNodePool},
		taints: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
			noSchedule("machines.fleetfit.io/small", "np-down"),
			noSchedule("machines.fleetfit.io/node-pool", "not-ready")},
	})

	t.Log("The node comes up")
	updateNode(t, "np-down", func(n *corev1.Node) { n.Spec.Taints = removeTaint(n.Spec.Taints, corev1.TaintNodeNotReady) })
	waitPool(t, "np-down", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-down", Condition: v1alpha1.NodeHealthReady},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))
	waitNode(t, "np-down", nodeCarries{
		labels: map[string]string{"machines.fleetfit.io/small": "np-down", "machines.fleetfit.io/node-pool": "ready"},
		taints: []corev1.Taint{noSchedule("machines.fleetfit.io/small", "np-down"), noSchedule("machines.fleetfit.io/node-pool", "ready")},
	})
}

func TestNodePoolMissingNode(t *testing.T) {
	startNodePool(t)
	createGroup(t, makeGroup("np-missing", "small").Node("np-later", "small", ready, false).Obj())
	pool := waitPool(t, "np-missing", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-later", Condition: v1alpha1.NodeHealthNotReady},
	}, metav1.ConditionFalse, nodepool.ReasonNodeNotFound))
	if c := meta.FindStatusCondition(pool.Status.Conditions, nodepool.ConditionReady); !strings.Contains(c.Message, "np-later") {
		t.Errorf("Ready message %q does not name the missing node", c.Message)
	}
	createLateNode(t, "np-later")
	waitPool(t, "np-missing", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-later", Condition: v1alpha1.NodeHealthReady},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))
	waitNode(t, "np-later", nodeCarries{
		labels: map[string]string{"machines.fleetfit.io/small": "np-missing", "machines.fleetfit.io/node-pool": "ready"},
	})
}

func TestNodePoolDoubleMembership(t *testing.T) {
	startNodePool(t)
	createNode(t, readyNode("np-shared").Obj())
	createGroup(t, makeGroup("np-first", "small").Node("np-shared", "small", ready, true).Obj())
	firstCarries := nodeCarries{
		labels:      map[string]string{"machines.fleetfit.io/small": "np-first", "machines.fleetfit.io/node-pool": "ready"},
		annotations: map[string]string{machinegroup.AnnotationMachineGroup: "np-first"},
		taints:      []corev1.Taint{noSchedule("machines.fleetfit.io/small", "np-first"), noSchedule("machines.fleetfit.io/node-pool", "ready")},
	}
	waitNode(t, "np-shared", firstCarries)
	waitPool(t, "np-first", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-shared", Condition: v1alpha1.NodeHealthReady},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))

	// Creation timestamps have a resolution of a second: the second group is
	// created in a later second, so that it is the later one whatever its name.
	time.Sleep(time.Second)
	createGroup(t, makeGroup("np-again", "large").Node("np-shared", "large", maintenance, false).Obj())
	pool := waitPool(t, "np-again", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-shared", Condition: v1alpha1.NodeHealthMaintenance},
	}, metav1.ConditionFalse, nodepool.ReasonNodeInOtherGroup))
	msg := meta.FindStatusCondition(pool.Status.Conditions, nodepool.ConditionReady).Message
	if !strings.Contains(msg, "node np-shared is in machine group np-first") {
		t.Errorf("Ready message %q does not name the node and the other group", msg)
	}
	t.Logf("Ready message: %s", msg)
	framework.Consistently(t, quietPeriod, func(ctx context.Context) error {
		n, err := kube().CoreV1().Nodes().Get(ctx, "np-shared", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if v, ok := n.Labels["machines.fleetfit.io/large"]; ok {
			return fmt.Errorf("the later group labelled the node: machines.fleetfit.io/large=%s", v)
		}
		return checkNode(n, firstCarries)
	})
	waitPool(t, "np-first", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-shared", Condition: v1alpha1.NodeHealthReady},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))

	t.Log("Once the first group is gone, the node is the second group's")
	deleteGroup(t, "np-first")
	waitNode(t, "np-shared", nodeCarries{
		labels:       map[string]string{"machines.fleetfit.io/large": "np-again"},
		absentLabels: []string{"machines.fleetfit.io/small", machinegroup.LabelNodePool},
		annotations:  map[string]string{machinegroup.AnnotationMachineGroup: "np-again"},
	})
	waitPool(t, "np-again", poolHealth([]v1alpha1.NodePoolNodeStatus{
		{Name: "np-shared", Condition: v1alpha1.NodeHealthMaintenance},
	}, metav1.ConditionTrue, nodepool.ReasonNodesLabelled))
}

// TestNodePoolCleansAfterRestart deletes a group while no controller runs: the
// next one finds the node by its annotation and cleans it.
func TestNodePoolCleansAfterRestart(t *testing.T) {
	stop := startNodePool(t)
	createNode(t, foreignNode("np-restart"))
	createGroup(t, makeGroup("np-restart", "small").Node("np-restart", "small", ready, true).Obj())
	waitNode(t, "np-restart", nodeCarries{
		labels:      map[string]string{"machines.fleetfit.io/small": "np-restart"},
		annotations: map[string]string{machinegroup.AnnotationMachineGroup: "np-restart"},
		taints:      []corev1.Taint{foreignTaint, noSchedule("machines.fleetfit.io/small", "np-restart"), noSchedule("machines.fleetfit.io/node-pool", "ready")},
	})
	stop()
	deleteGroup(t, "np-restart")
	startNodePool(t)
	waitNode(t, "np-restart", nodeCarries{
		labels:            foreignLabels,
		annotations:       foreignAnnotation,
		absentLabels:      []string{"machines.fleetfit.io/small", machinegroup.LabelNodePool},
		absentAnnotations: []string{machinegroup.AnnotationMachineGroup},
		taints:            []corev1.Taint{foreignTaint},
	})
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func removeTaint(taints []corev1.Taint, key string) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Key != key {
			out = append(out, t)
		}
	}
	return out
}

// TestNodePoolPutsBackItsPool checks that the MachineNodePool stays a copy of
// its group's pool when someone else edits or deletes it.
func TestNodePoolPutsBackItsPool(t *testing.T) {
	startNodePool(t)
	createNode(t, readyNode("np-copy").Obj())
	group := createGroup(t, makeGroup("np-copy", "small").Node("np-copy", "small", ready, false).Obj())
	isCopy := func(p *v1alpha1.MachineNodePool) error {
		if diff := cmp.Diff(group.Spec.NodePools, p.Spec.NodePool); diff != "" {
			return fmt.Errorf("pool spec.nodePool (-want,+got):\n%s", diff)
		}
		return nil
	}
	waitPool(t, "np-copy", isCopy)

	pools := fleetfit().FleetfitV1alpha1().MachineNodePools()
	framework.Eventually(t, func(ctx context.Context) error {
		p, err := pools.Get(ctx, machinegroup.NodePoolName("np-copy"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.NodePool[0].Mode = maintenance
		_, err = pools.Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	waitPool(t, "np-copy", isCopy)

	if err := pools.Delete(t.Context(), machinegroup.NodePoolName("np-copy"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPool(t, "np-copy", func(p *v1alpha1.MachineNodePool) error {
		if err := isCopy(p); err != nil {
			return err
		}
		return poolHealth([]v1alpha1.NodePoolNodeStatus{{Name: "np-copy", Condition: v1alpha1.NodeHealthReady}},
			metav1.ConditionTrue, nodepool.ReasonNodesLabelled)(p)
	})
}
