package inventory

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// randomPod draws a pod that exercises every rule of the request
// computation: app, init and sidecar containers, overhead, resized requests
// in container statuses (some infeasible), pod-level requests, and
// quantities that are not whole thousandths, negative or huge.
func randomPod(rng *rand.Rand) *corev1.Pod {
	names := []corev1.ResourceName{"cpu", "memory", "nvidia.com/gpu", "pods", "hugepages-2Mi", "example.com/foo"}
	exact := []string{"0", "1m", "100m", "250m", "1", "2", "3500m", "128Mi", "1Gi", "1.5Gi", "64Ki", "1k", "7"}
	odd := []string{"0.5m", "1n", "1e-4", "-1", "-100m", "9e15", "1e18", "100Ei", "123456789123456789", "1.0001m"}
	quantity := func() resource.Quantity {
		if rng.IntN(12) == 0 {
			return resource.MustParse(odd[rng.IntN(len(odd))])
		}
		return resource.MustParse(exact[rng.IntN(len(exact))])
	}
	list := func(maxLen int) corev1.ResourceList {
		if rng.IntN(6) == 0 {
			return nil
		}
		l := corev1.ResourceList{}
		for range rng.IntN(maxLen + 1) {
			l[names[rng.IntN(len(names))]] = quantity()
		}
		return l
	}
	containerNames := []string{"a", "b", "c", "d", "e"}
	container := func() corev1.Container {
		return corev1.Container{
			Name:      containerNames[rng.IntN(len(containerNames))],
			Resources: corev1.ResourceRequirements{Requests: list(3)},
		}
	}
	status := func(name string) corev1.ContainerStatus {
		cs := corev1.ContainerStatus{Name: name}
		if rng.IntN(3) > 0 {
			cs.Resources = &corev1.ResourceRequirements{Requests: list(3)}
		}
		if rng.IntN(2) == 0 {
			cs.AllocatedResources = list(3)
		}
		return cs
	}

	pod := makePod("p", "n").Obj()
	for range rng.IntN(4) {
		pod.Spec.Containers = append(pod.Spec.Containers, container())
	}
	for range rng.IntN(4) {
		c := container()
		if rng.IntN(2) == 0 {
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	if rng.IntN(4) == 0 {
		pod.Spec.Overhead = list(2)
	}
	if rng.IntN(8) == 0 {
		pod.Spec.Resources = &corev1.ResourceRequirements{Requests: list(2), Limits: list(1)}
	}
	for range rng.IntN(4) {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, status(containerNames[rng.IntN(len(containerNames))]))
	}
	for range rng.IntN(3) {
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, status(containerNames[rng.IntN(len(containerNames))]))
	}
	if rng.IntN(4) == 0 {
		reason := []string{corev1.PodReasonInfeasible, corev1.PodReasonDeferred}[rng.IntN(2)]
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue, Reason: reason})
	}
	return pod
}

// TestFastPodRequestsMatchesHelper checks the map-free request computation
// against Kubernetes' helper on random pods, and that it handles most of
// them itself.
func TestFastPodRequestsMatchesHelper(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 4))
	var a podAccumulator
	fast := 0
	const n = 20000
	for i := range n {
		// Each call gets its own copy: the helper can write through the
		// shared inf.Dec of a pod-level request when it adds overhead.
		pod := randomPod(rng)
		want := slowPodRequests(pod.DeepCopy())
		if diff := cmp.Diff(want, PodRequests(pod.DeepCopy())); diff != "" {
			t.Fatalf("pod %d: PodRequests differs from the helper (-helper,+got):\n%s\npod: %s", i, diff, describePod(pod))
		}
		if got, ok := a.podRequests(pod.DeepCopy()); ok {
			fast++
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("pod %d: the fast path differs from the helper (-helper,+fast):\n%s\npod: %s", i, diff, describePod(pod))
			}
		}
	}
	t.Logf("%d of %d pods took the fast path", fast, n)
	if fast < n/4 || fast == n {
		t.Errorf("the random pods are unbalanced: %d of %d took the fast path", fast, n)
	}
}

// TestFastPodRequestsDeclines lists pods the fast path must leave to the
// helper.
func TestFastPodRequestsDeclines(t *testing.T) {
	cases := map[string]*corev1.Pod{
		"pod-level requests": func() *corev1.Pod {
			p := makePod("p", "n").Container("cpu", "1").Obj()
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: rl("cpu", "2")}
			return p
		}(),
		"sub-milli amounts": makePod("p", "n").Container("cpu", "0.5m").Container("cpu", "0.5m").Obj(),
		"negative amounts":  makePod("p", "n").Container("cpu", "-1").Container("cpu", "2").Obj(),
		"huge amounts":      makePod("p", "n").Container("memory", "100Ei").Obj(),
	}
	var a podAccumulator
	for name, pod := range cases {
		t.Run(name, func(t *testing.T) {
			if v, ok := a.podRequests(pod); ok {
				t.Errorf("fast path took the pod and returned %v", v)
			}
			if diff := cmp.Diff(slowPodRequests(pod), PodRequests(pod)); diff != "" {
				t.Errorf("PodRequests differs from the helper (-helper,+got):\n%s", diff)
			}
		})
	}
}

func TestPodRequestsWithResizeStatus(t *testing.T) {
	pod := makePod("p", "n").Container("cpu", "1", "memory", "1Gi").Obj()
	pod.Spec.Containers[0].Name = "app"
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:               "app",
		Resources:          &corev1.ResourceRequirements{Requests: rl("cpu", "2", "memory", "512Mi")},
		AllocatedResources: rl("cpu", "1500m"),
	}}
	if diff := cmp.Diff(vec("cpu", "2", "memory", "1Gi", "pods", "1"), PodRequests(pod)); diff != "" {
		t.Errorf("resize in progress (-want,+got):\n%s", diff)
	}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodResizePending, Reason: corev1.PodReasonInfeasible}}
	if diff := cmp.Diff(vec("cpu", "2", "memory", "512Mi", "pods", "1"), PodRequests(pod)); diff != "" {
		t.Errorf("infeasible resize (-want,+got):\n%s", diff)
	}
}

func describePod(p *corev1.Pod) string {
	return fmt.Sprintf("containers %v init %v overhead %v pod-level %v statuses %v init statuses %v conditions %v",
		p.Spec.Containers, p.Spec.InitContainers, p.Spec.Overhead, p.Spec.Resources,
		p.Status.ContainerStatuses, p.Status.InitContainerStatuses, p.Status.Conditions)
}

// TestInPlaceArithmeticMatches checks addInPlace and subInPlace against Add
// and Sub on random vectors, and that they never write to their argument.
func TestInPlaceArithmeticMatches(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	names := []corev1.ResourceName{"a", "b", "c", "d", "e", "f"}
	random := func() Vector {
		var v Vector
		for _, n := range names {
			if rng.IntN(2) == 0 {
				m := int64(1 + rng.IntN(5000))
				if rng.IntN(20) == 0 {
					m = math.MaxInt64 - int64(rng.IntN(3))
				}
				v = append(v, Amount{Name: n, Milli: m})
			}
		}
		return v
	}
	for i := range 20000 {
		v, w := random(), random()
		if rng.IntN(2) == 0 {
			v = append(make(Vector, 0, len(v)+rng.IntN(4)), v...) // spare room
		}
		wantAdd, wantSub := v.Add(w), v.Sub(w)
		wBefore := slices.Clone(w)
		gotAdd := append(make(Vector, 0, cap(v)), v...).addInPlace(w)
		gotSub := slices.Clone(v).subInPlace(w)
		if !gotAdd.Equal(wantAdd) || !gotSub.Equal(wantSub) || !w.Equal(wBefore) {
			t.Fatalf("case %d: %v ± %v: addInPlace %v (want %v), subInPlace %v (want %v), argument now %v",
				i, v, wBefore, gotAdd, wantAdd, gotSub, wantSub, w)
		}
	}
}
