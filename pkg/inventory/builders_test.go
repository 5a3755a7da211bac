package inventory

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// rl builds a ResourceList from name, quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	list := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		list[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return list
}

// vec builds a Vector from name, quantity pairs.
func vec(pairs ...string) Vector { return NewVector(rl(pairs...)) }

type nodeWrapper struct{ corev1.Node }

// makeNode starts a Ready, schedulable node with nothing allocatable.
func makeNode(name string) *nodeWrapper {
	return &nodeWrapper{corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionTrue},
		}},
	}}
}

func (w *nodeWrapper) Obj() *corev1.Node             { return w.DeepCopy() }
func (w *nodeWrapper) Clone() *nodeWrapper           { return &nodeWrapper{*w.DeepCopy()} }
func (w *nodeWrapper) Name(name string) *nodeWrapper { w.Node.Name = name; return w }

// Resources sets capacity and allocatable alike.
func (w *nodeWrapper) Resources(pairs ...string) *nodeWrapper {
	w.Status.Capacity = rl(pairs...)
	w.Status.Allocatable = rl(pairs...)
	return w
}

func (w *nodeWrapper) Allocatable(pairs ...string) *nodeWrapper {
	w.Status.Allocatable = rl(pairs...)
	return w
}

func (w *nodeWrapper) Label(key, value string) *nodeWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[key] = value
	return w
}

func (w *nodeWrapper) Taint(key, value string, effect corev1.TaintEffect) *nodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	return w
}

func (w *nodeWrapper) NotReady() *nodeWrapper {
	w.Status.Conditions[0].Status = corev1.ConditionFalse
	return w
}

func (w *nodeWrapper) Cordoned() *nodeWrapper {
	w.Spec.Unschedulable = true
	return w
}

type podWrapper struct{ corev1.Pod }

// makePod starts a Running pod bound to node with no containers.
func makePod(name, node string) *podWrapper {
	return &podWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.PodSpec{NodeName: node},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}}
}

func (w *podWrapper) Obj() *corev1.Pod { return w.DeepCopy() }

func (w *podWrapper) Container(pairs ...string) *podWrapper {
	w.Spec.Containers = append(w.Spec.Containers, corev1.Container{
		Name: "c", Resources: corev1.ResourceRequirements{Requests: rl(pairs...)}})
	return w
}

func (w *podWrapper) InitContainer(pairs ...string) *podWrapper {
	w.Spec.InitContainers = append(w.Spec.InitContainers, corev1.Container{
		Name: "i", Resources: corev1.ResourceRequirements{Requests: rl(pairs...)}})
	return w
}

// Sidecar appends a restartable init container.
func (w *podWrapper) Sidecar(pairs ...string) *podWrapper {
	w.Spec.InitContainers = append(w.Spec.InitContainers, corev1.Container{
		Name: "s", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
		Resources: corev1.ResourceRequirements{Requests: rl(pairs...)}})
	return w
}

func (w *podWrapper) Overhead(pairs ...string) *podWrapper {
	w.Spec.Overhead = rl(pairs...)
	return w
}

func (w *podWrapper) Phase(p corev1.PodPhase) *podWrapper {
	w.Status.Phase = p
	return w
}

// summarize builds a Cluster from nodes and pods and summarises it.
func summarize(t testing.TB, cfg Config, nodes []*corev1.Node, pods []*corev1.Pod) v1alpha1.ClusterInventoryStatus {
	t.Helper()
	c, err := NewCluster(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		c.UpsertNode(n)
	}
	for _, p := range pods {
		c.UpsertPod(p)
	}
	return c.Summarize()
}

// mustRequest compiles a request or fails the test.
func mustRequest(t testing.TB, resources corev1.ResourceList, features []corev1.NodeSelectorRequirement, tolerations ...corev1.Toleration) *Request {
	t.Helper()
	r, err := NewRequest(resources, features, tolerations)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
