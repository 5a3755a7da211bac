package agent

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// minInterval is the agent's interval in these tests: short, so the tests
// are quick, but long enough to coalesce a test's setup.
const minInterval = 300 * time.Millisecond

// nodeBuilder builds a Ready node with the given allocatable (capacity is
// the same) and labels.
type nodeBuilder struct{ node *corev1.Node }

func makeNode(name string) *nodeBuilder {
	return &nodeBuilder{node: &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}}
}

func (b *nodeBuilder) resource(name corev1.ResourceName, q string) *nodeBuilder {
	b.node.Status.Capacity[name] = resource.MustParse(q)
	b.node.Status.Allocatable[name] = resource.MustParse(q)
	return b
}

func (b *nodeBuilder) label(k, v string) *nodeBuilder {
	b.node.Labels[k] = v
	return b
}

func (b *nodeBuilder) obj() *corev1.Node { return b.node.DeepCopy() }

// createNode creates the node and then sets its status through the status
// subresource, as a kubelet would. The API server's TaintNodesByCondition
// admission taints new nodes not-ready; with no node lifecycle controller
// running, the taints are set back to the node's own, as that controller
// would once the node is Ready.
func createNode(ctx context.Context, c kubernetes.Interface, n *corev1.Node) error {
	created, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating node %s: %w", n.Name, err)
	}
	created.Spec.Taints = n.Spec.Taints
	if created, err = c.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("untainting node %s: %w", n.Name, err)
	}
	created.Status = n.Status
	if _, err := c.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("setting status of node %s: %w", n.Name, err)
	}
	return nil
}

// makePod returns a pod bound to node whose one container requests the
// given resources, as "name=quantity" pairs.
func makePod(namespace, name, node string, requests corev1.ResourceList) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: extendedOnly(requests)},
			}},
		},
	}
}

// extendedOnly returns the extended resources of list: the API server
// requires limits equal to requests for them.
func extendedOnly(list corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			out[name] = q
		}
	}
	return out
}
