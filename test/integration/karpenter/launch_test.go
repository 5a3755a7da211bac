// How long a launch takes, measured on the 2-core development machine with
// go test -race (Karpenter v1.14.0, three runs): from creating a pod that
// needs 4 GPUs, kube-scheduler marks it Unschedulable after 0.23-0.3s,
// Karpenter creates the NodeClaim after 1.05-1.13s (its batch window closes
// 1s after the last pending pod), the Node appears and the pod Runs on it
// after 2.15-2.35s, and the NodeClaim is Initialized after 2.2-3.3s. The
// control plane, kube-controller-manager, kube-scheduler, kwok and Karpenter
// start in 4-5s; the whole test takes about 34s, 20s of it checking that
// nothing is launched beyond the pool's limit.

package karpenter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fleetfit/fleetfit/test/framework"
)

const (
	gpu       = corev1.ResourceName("nvidia.com/gpu")
	poolName  = "gpu"
	classname = "default"
	ns        = "default"
	// poolGPULimit is the NodePool's limit: two gpu-4x nodes.
	poolGPULimit = "8"
	// waitLaunch bounds one launch: Karpenter's batch window (1s idle, at
	// most 10s), the NodeClaim, the Node, kwok making it Ready and the node
	// lifecycle controller lifting the not-ready taint.
	waitLaunch = 2 * time.Minute
	// quiet is how long a pod beyond the limit must stay Pending without a
	// new NodeClaim: longer than Karpenter's longest batch window (10s).
	quiet = 20 * time.Second
)

var (
	nodePools       = schema.GroupVersionResource{Group: framework.KarpenterGroup, Version: framework.KarpenterVersion, Resource: "nodepools"}
	nodeClaims      = schema.GroupVersionResource{Group: framework.KarpenterGroup, Version: framework.KarpenterVersion, Resource: "nodeclaims"}
	kwokNodeClasses = schema.GroupVersionResource{Group: framework.KarpenterKwokGroup, Version: framework.KarpenterKwokVersion, Resource: "kwoknodeclasses"}
)

// gpuPool is the NodePool under test: GPU instance types only, on-demand,
// tainted so that only pods that ask for GPUs land there, at most
// poolGPULimit GPUs in all, and never disrupted while the test runs.
func gpuPool() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": framework.KarpenterGroup + "/" + framework.KarpenterVersion,
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": poolName},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"fleetfit.io/test-pool": poolName}},
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": framework.KarpenterKwokGroup, "kind": framework.KarpenterNodeClassKind, "name": classname},
					"requirements": []any{
						map[string]any{"key": corev1.LabelInstanceTypeStable, "operator": "In", "values": []any{"gpu-4x", "gpu-8x"}},
						map[string]any{"key": framework.KarpenterCapacityTypeKey, "operator": "In", "values": []any{framework.KarpenterOnDemand}},
					},
					"taints":      []any{map[string]any{"key": string(gpu), "value": "present", "effect": "NoSchedule"}},
					"expireAfter": "Never",
				},
			},
			"limits":     map[string]any{string(gpu): poolGPULimit},
			"disruption": map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"},
		},
	}}
}

// gpuPod asks for gpus GPUs and tolerates the pool's taint.
func gpuPod(name string, gpus string) *corev1.Pod {
	r := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), gpu: resource.MustParse(gpus)}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{
			Containers:  []corev1.Container{{Name: "train", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{Requests: r, Limits: r}}},
			Tolerations: []corev1.Toleration{{Key: string(gpu), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
}

// TestKarpenterLaunchesGPUNodesUpToThePoolLimit: a spoke with no node at
// all, Karpenter's kwok provider and a NodePool of GPU instance types
// limited to 8 GPUs. A pod needing 4 GPUs is Unschedulable until Karpenter
// launches a gpu-4x node for it (a NodeClaim, then a Node kwok runs); it
// then runs there. A second such pod gets a second node, which takes the
// pool to its limit; a third stays Pending, with no new NodeClaim, and
// Karpenter says why.
func TestKarpenterLaunchesGPUNodesUpToThePoolLimit(t *testing.T) {
	framework.SkipWithoutKarpenter(t)
	ctx := t.Context()
	start := time.Now()
	cp, err := framework.StartControlPlane(ctx, "spoke", framework.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	rt, err := framework.StartPodRuntime(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("process logs:\n%s", rt.LogTails(30))
		}
	})
	karpenter := framework.StartKarpenter(t, cp, framework.KarpenterOptions{})
	t.Logf("control plane, pod runtime and Karpenter up in %v", time.Since(start).Round(100*time.Millisecond))

	kube := cp.AdminClient()
	dyn := dynamic.NewForConfigOrDie(cp.AdminConfig())
	class := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": framework.KarpenterKwokGroup + "/" + framework.KarpenterKwokVersion,
		"kind":       framework.KarpenterNodeClassKind,
		"metadata":   map[string]any{"name": classname},
	}}
	if _, err := dyn.Resource(kwokNodeClasses).Create(ctx, class, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(nodePools).Create(ctx, gpuPool(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logKarpenterState(t, kube, dyn)
		}
	})

	// First pod: one gpu-4x node.
	first := launch(t, kube, dyn, "trainer-1")
	checkNode(t, first.node, "gpu-4x")
	t.Logf("Karpenter's node %s: labels %v, annotations %v, taints %v, allocatable %v",
		first.node.Name, first.node.Labels, first.node.Annotations, first.node.Spec.Taints, first.node.Status.Allocatable)
	t.Logf("NodeClaim %s: labels %v, status %v", first.claim.GetName(), first.claim.GetLabels(), first.claim.Object["status"])

	// Second pod: a second gpu-4x node, not room on the first (it has 4 GPUs).
	second := launch(t, kube, dyn, "trainer-2", first.claim.GetName())
	checkNode(t, second.node, "gpu-4x")
	if second.node.Name == first.node.Name {
		t.Fatalf("trainer-2 runs on %s, the node of trainer-1, which has no GPU left", second.node.Name)
	}
	// The pool now uses its 8 GPUs. status.resources sums the capacity of
	// the pool's nodes, which the kwok provider sets to what the pods a node
	// was launched for requested, not to the instance type's size: these
	// pods ask for whole gpu-4x nodes, so both agree here.
	framework.Eventually(t, func(ctx context.Context) error {
		pool, err := dyn.Resource(nodePools).Get(ctx, poolName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		used, _, _ := unstructured.NestedString(pool.Object, "status", "resources", string(gpu))
		if used != poolGPULimit {
			return fmt.Errorf("NodePool %s uses %q GPUs, want %s: status %v", poolName, used, poolGPULimit, pool.Object["status"])
		}
		t.Logf("NodePool %s status: %v", poolName, pool.Object["status"])
		return nil
	})

	// Third pod: the limit is reached; Karpenter says so and launches nothing.
	third := gpuPod("trainer-3", "4")
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, third, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=trainer-3"})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if strings.Contains(e.Message, "exceed limits for nodepool") {
				t.Logf("event on trainer-3: %s %s (%s): %s", e.Type, e.Reason, e.Source.Component, e.Message)
				return nil
			}
		}
		return fmt.Errorf("no event on trainer-3 says the pool's limit is reached (%d events)", len(events.Items))
	})
	framework.Consistently(t, quiet, func(ctx context.Context) error {
		claims, err := dyn.Resource(nodeClaims).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if n := len(claims.Items); n != 2 {
			return fmt.Errorf("%d NodeClaims with the pool at its limit, want 2", n)
		}
		nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if n := len(nodes.Items); n != 2 {
			return fmt.Errorf("%d nodes with the pool at its limit, want 2", n)
		}
		p, err := kube.CoreV1().Pods(ns).Get(ctx, "trainer-3", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("trainer-3 is %s on %q with the pool at its limit, want Pending and unbound", p.Status.Phase, p.Spec.NodeName)
		}
		return nil
	})
	if done, err := karpenter.Exited(); done {
		t.Fatalf("Karpenter exited: %v", err)
	}
	t.Logf("whole test: %v", time.Since(start).Round(100*time.Millisecond))
}

// launched is what Karpenter launched for a pod.
type launched struct {
	claim *unstructured.Unstructured
	node  *corev1.Node
}

// launch creates a pod needing 4 GPUs and waits until Karpenter made one
// NodeClaim besides those before, its Node runs the pod and the NodeClaim is
// Initialized; it logs how long each step took (kube-scheduler finding the
// pod Unschedulable among them).
func launch(t *testing.T, kube kubernetes.Interface, dyn dynamic.Interface, name string, before ...string) launched {
	t.Helper()
	ctx := t.Context()
	created := time.Now()
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, gpuPod(name, "4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got launched
	var unschedulable, claimed, noded, running, initialized time.Duration
	err := pollUntil(ctx, waitLaunch, func(ctx context.Context) (bool, error) {
		since := time.Since(created)
		p, err := kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if unschedulable == 0 && slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}) {
			unschedulable = since
		}
		list, err := dyn.Resource(nodeClaims).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		if claims := len(before) + 1; len(list.Items) > claims {
			return false, fmt.Errorf("%d NodeClaims for %d pods", len(list.Items), claims)
		}
		if len(list.Items) == len(before) {
			return false, nil
		}
		if claimed == 0 {
			claimed = since
		}
		i := slices.IndexFunc(list.Items, func(c unstructured.Unstructured) bool { return !slices.Contains(before, c.GetName()) })
		if i < 0 {
			return false, fmt.Errorf("no new NodeClaim among %d", len(list.Items))
		}
		newest := list.Items[i]
		got.claim = &newest
		nodeName, _, _ := unstructured.NestedString(newest.Object, "status", "nodeName")
		if nodeName == "" {
			return false, nil
		}
		if noded == 0 {
			noded = since
		}
		if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning && running == 0 {
			running = since
		}
		if initialized == 0 && conditionTrue(&newest, "Initialized") {
			initialized = since
		}
		if running == 0 || initialized == 0 {
			return false, nil
		}
		if p.Spec.NodeName != nodeName {
			return false, fmt.Errorf("%s runs on %s, not on %s, the node of NodeClaim %s", name, p.Spec.NodeName, nodeName, newest.GetName())
		}
		got.node, err = kube.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("%s: %v (after %v: Unschedulable at %v, NodeClaim at %v, Node at %v, Running at %v, Initialized at %v)",
			name, err, time.Since(created).Round(time.Millisecond), unschedulable, claimed, noded, running, initialized)
	}
	r := func(d time.Duration) time.Duration { return d.Round(10 * time.Millisecond) }
	t.Logf("launch for %s: Unschedulable after %v, NodeClaim %s after %v, Node %s after %v, pod Running after %v, NodeClaim Initialized after %v",
		name, r(unschedulable), got.claim.GetName(), r(claimed), got.node.Name, r(noded), r(running), r(initialized))
	return got
}

// checkNode checks what Karpenter and its kwok provider put on a node of
// the pool: its labels, the pool's taint and no other, and the instance
// type's 4 GPUs.
func checkNode(t *testing.T, n *corev1.Node, instanceType string) {
	t.Helper()
	for k, v := range map[string]string{
		"karpenter.sh/nodepool":          poolName,
		"karpenter.sh/capacity-type":     framework.KarpenterOnDemand,
		"karpenter.sh/initialized":       "true",
		"karpenter.sh/registered":        "true",
		corev1.LabelInstanceTypeStable:   instanceType,
		corev1.LabelTopologyZone:         framework.KarpenterDefaultZone,
		"fleetfit.io/test-pool":          poolName,
		framework.KwokNodeAnnotation:     framework.KwokNodeValue,
		"karpenter.kwok.sh/instance-cpu": "32",
	} {
		if got := n.Labels[k]; got != v {
			t.Errorf("node %s: label %s=%q, want %q", n.Name, k, got, v)
		}
	}
	if got := n.Annotations[framework.KwokNodeAnnotation]; got != framework.KwokNodeValue {
		t.Errorf("node %s: annotation %s=%q, want %q (kwok would not run it)", n.Name, framework.KwokNodeAnnotation, got, framework.KwokNodeValue)
	}
	want := corev1.Taint{Key: string(gpu), Value: "present", Effect: corev1.TaintEffectNoSchedule}
	if len(n.Spec.Taints) != 1 || !n.Spec.Taints[0].MatchTaint(&want) || n.Spec.Taints[0].Value != want.Value {
		t.Errorf("node %s: taints %v, want only %s", n.Name, n.Spec.Taints, want.ToString())
	}
	if q := n.Status.Allocatable[gpu]; q.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("node %s: allocatable %s %s, want 4", n.Name, gpu, q.String())
	}
	if err := framework.NodeSchedulable(n); err != nil {
		t.Errorf("node %s: %v", n.Name, err)
	}
}

func conditionTrue(u *unstructured.Unstructured, condition string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == condition && m["status"] == "True" {
			return true
		}
	}
	return false
}

// pollUntil calls fn every framework.PollInterval until it returns true or an
// error, or timeout passes.
func pollUntil(ctx context.Context, timeout time.Duration, fn func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := fn(ctx)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done within %v", timeout)
		case <-time.After(framework.PollInterval):
		}
	}
}

// logKarpenterState logs the NodePools, NodeClaims, nodes and pods, to
// explain a failure.
func logKarpenterState(t *testing.T, kube kubernetes.Interface, dyn dynamic.Interface) {
	ctx := context.Background()
	for _, gvr := range []schema.GroupVersionResource{nodePools, nodeClaims} {
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Logf("listing %s: %v", gvr.Resource, err)
			continue
		}
		for _, o := range list.Items {
			t.Logf("%s %s: status %v", gvr.Resource, o.GetName(), o.Object["status"])
		}
	}
	if nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			t.Logf("node %s: labels %v taints %v conditions %v", n.Name, n.Labels, n.Spec.Taints, n.Status.Conditions)
		}
	}
	if pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s on %q: %s %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
	}
}
