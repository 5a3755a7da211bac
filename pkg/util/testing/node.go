package testing

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrapper builds Ready nodes for tests and the demo.
type NodeWrapper struct{ corev1.Node }

// MakeNode returns a Ready, schedulable node with room for 110 pods.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}}
}

// Resource sets the capacity and allocatable of a resource.
func (w *NodeWrapper) Resource(name corev1.ResourceName, q string) *NodeWrapper {
	w.Status.Capacity[name] = resource.MustParse(q)
	w.Status.Allocatable[name] = resource.MustParse(q)
	return w
}

// Label sets a label.
func (w *NodeWrapper) Label(k, v string) *NodeWrapper {
	w.Labels[k] = v
	return w
}

// Taint adds a taint.
func (w *NodeWrapper) Taint(key, value string, effect corev1.TaintEffect) *NodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}

// Obj returns a copy of the built node.
func (w *NodeWrapper) Obj() *corev1.Node { return w.Node.DeepCopy() }

// MakePod returns a pod bound to node whose one container requests the given resources
// (extended resources also as limits, as the API server requires).
func MakePod(namespace, name, node string, requests corev1.ResourceList) *corev1.Pod {
	limits := corev1.ResourceList{}
	for n, q := range requests {
		if n != corev1.ResourceCPU && n != corev1.ResourceMemory {
			limits[n] = q
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
			}},
		},
	}
}
