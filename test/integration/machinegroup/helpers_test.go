package machinegroup

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetfit/fleetfit/pkg/agent/machinegroup/nodepool"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// nodePoolUser is the identity the node pool controller runs as: it may do
// what nodepool.Rules grant and nothing else, so the tests also check that the
// rules are enough (the suite's API server enforces owner reference
// permissions too).
const nodePoolUser = "system:fleetfit:node-pool"

var grantOnce = sync.OnceValue(func() error {
	ctx := context.Background()
	rbac := spoke.AdminClient().RbacV1()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fleetfit-node-pool"}, Rules: nodepool.Rules()}
	if _, err := rbac.ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "fleetfit-node-pool"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: nodePoolUser}},
	}
	_, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	return err
})

// startNodePool runs a node pool controller as nodePoolUser until the test
// ends, and returns a function that stops it earlier and waits for it.
func startNodePool(t *testing.T) (stop func()) {
	t.Helper()
	if err := grantOnce(); err != nil {
		t.Fatalf("granting the node pool controller's RBAC: %v", err)
	}
	cfg, err := spoke.UserConfig(nodePoolUser)
	if err != nil {
		t.Fatal(err)
	}
	c := nodepool.New(kubernetes.NewForConfigOrDie(cfg), fleetfitclient.NewForConfigOrDie(cfg))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("node pool controller: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func kube() kubernetes.Interface { return spoke.AdminClient() }

func fleetfit() fleetfitclient.Interface {
	return fleetfitclient.NewForConfigOrDie(spoke.AdminConfig())
}

// makeGroup returns a group offering machine types of 1 CPU and 1Gi each,
// labelled with its own name.
func makeGroup(name string, types ...string) *utiltesting.MachineGroupWrapper {
	w := utiltesting.MakeMachineGroup(name).Label(machinegroup.LabelMachineGroup, name)
	for _, t := range types {
		w.MachineType(utiltesting.MakeGroupMachineType(t, "1", "1Gi").Available(1).Obj())
	}
	return w
}

func createGroup(t *testing.T, g *v1alpha1.MachineGroup) *v1alpha1.MachineGroup {
	t.Helper()
	created, err := fleetfit().FleetfitV1alpha1().MachineGroups().Create(t.Context(), g, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating MachineGroup %s: %v", g.Name, err)
	}
	t.Cleanup(func() {
		err := fleetfit().FleetfitV1alpha1().MachineGroups().Delete(context.Background(), g.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting MachineGroup %s: %v", g.Name, err)
		}
	})
	return created
}

// updateGroup edits a group with retries on conflicts.
func updateGroup(t *testing.T, name string, edit func(g *v1alpha1.MachineGroup)) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		g, err := fleetfit().FleetfitV1alpha1().MachineGroups().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(g)
		_, err = fleetfit().FleetfitV1alpha1().MachineGroups().Update(ctx, g, metav1.UpdateOptions{})
		return err
	})
}

func deleteGroup(t *testing.T, name string) {
	t.Helper()
	if err := fleetfit().FleetfitV1alpha1().MachineGroups().Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting MachineGroup %s: %v", name, err)
	}
}

// createNode creates a Ready node and deletes it when the test ends.
func createNode(t *testing.T, n *corev1.Node) {
	t.Helper()
	if err := framework.CreateNode(t.Context(), kube(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kube().CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", n.Name, err)
		}
	})
}

// createLateNode creates a node that a pool already names, which the
// controller may write to as soon as it exists, and then takes away the
// not-ready taint the API server's admission put on it, as the node lifecycle
// controller would once the node is Ready.
func createLateNode(t *testing.T, name string) {
	t.Helper()
	n := readyNode(name).Obj()
	if _, err := kube().CoreV1().Nodes().Create(t.Context(), n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := kube().CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting node %s: %v", name, err)
		}
	})
	updateNode(t, name, func(n *corev1.Node) { n.Spec.Taints = removeTaint(n.Spec.Taints, corev1.TaintNodeNotReady) })
}

// updateNode edits a node with retries on conflicts.
func updateNode(t *testing.T, name string, edit func(n *corev1.Node)) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		n, err := kube().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(n)
		_, err = kube().CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
}

// nodeCarries is what a test expects on a node: every label, annotation and
// taint listed (an empty value in absentLabels/absentAnnotations: the key is
// absent), and exactly these taints.
type nodeCarries struct {
	labels            map[string]string
	annotations       map[string]string
	absentLabels      []string
	absentAnnotations []string
	taints            []corev1.Taint
}

// waitNode waits until the node carries want.
func waitNode(t *testing.T, name string, want nodeCarries) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		n, err := kube().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return checkNode(n, want)
	})
}

func checkNode(n *corev1.Node, want nodeCarries) error {
	for k, v := range want.labels {
		if got, ok := n.Labels[k]; !ok || got != v {
			return fmt.Errorf("node %s: label %s = %q (set: %v), want %q", n.Name, k, got, ok, v)
		}
	}
	for _, k := range want.absentLabels {
		if v, ok := n.Labels[k]; ok {
			return fmt.Errorf("node %s: label %s = %q, want none", n.Name, k, v)
		}
	}
	for k, v := range want.annotations {
		if got, ok := n.Annotations[k]; !ok || got != v {
			return fmt.Errorf("node %s: annotation %s = %q (set: %v), want %q", n.Name, k, got, ok, v)
		}
	}
	for _, k := range want.absentAnnotations {
		if v, ok := n.Annotations[k]; ok {
			return fmt.Errorf("node %s: annotation %s = %q, want none", n.Name, k, v)
		}
	}
	if diff := cmp.Diff(want.taints, n.Spec.Taints); diff != "" {
		return fmt.Errorf("node %s: taints (-want,+got):\n%s", n.Name, diff)
	}
	return nil
}

// waitPool waits until the group's MachineNodePool passes check.
func waitPool(t *testing.T, group string, check func(p *v1alpha1.MachineNodePool) error) *v1alpha1.MachineNodePool {
	t.Helper()
	var pool *v1alpha1.MachineNodePool
	framework.Eventually(t, func(ctx context.Context) error {
		p, err := fleetfit().FleetfitV1alpha1().MachineNodePools().Get(ctx, machinegroup.NodePoolName(group), metav1.GetOptions{})
		if err != nil {
			return err
		}
		pool = p
		return check(p)
	})
	return pool
}

// poolHealth checks the pool's node health and Ready condition for the
// pool's current generation.
func poolHealth(nodes []v1alpha1.NodePoolNodeStatus, ready metav1.ConditionStatus, reason string) func(p *v1alpha1.MachineNodePool) error {
	return func(p *v1alpha1.MachineNodePool) error {
		if p.Status.ObservedGeneration != p.Generation {
			return fmt.Errorf("pool %s: observed generation %d, generation %d", p.Name, p.Status.ObservedGeneration, p.Generation)
		}
		if diff := cmp.Diff(nodes, p.Status.NodePool); diff != "" {
			return fmt.Errorf("pool %s: node health (-want,+got):\n%s", p.Name, diff)
		}
		c := meta.FindStatusCondition(p.Status.Conditions, nodepool.ConditionReady)
		if c == nil || c.Status != ready || c.Reason != reason {
			return fmt.Errorf("pool %s: Ready condition %+v, want %s with reason %s", p.Name, c, ready, reason)
		}
		return nil
	}
}

func noSchedule(key, value string) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffectNoSchedule}
}

func readyNode(name string) *utiltesting.NodeWrapper { return utiltesting.MakeNode(name) }
