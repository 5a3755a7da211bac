package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestPodRequests(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want Vector
	}{
		"no requests still take a pod slot": {
			pod:  makePod("p", "n").Container().Obj(),
			want: vec("pods", "1"),
		},
		"app containers add up": {
			pod:  makePod("p", "n").Container("cpu", "1", "memory", "1Gi").Container("cpu", "500m").Obj(),
			want: vec("cpu", "1500m", "memory", "1Gi", "pods", "1"),
		},
		"a larger init container sets the floor per resource": {
			pod:  makePod("p", "n").Container("cpu", "1", "memory", "1Gi").InitContainer("cpu", "3", "memory", "512Mi").Obj(),
			want: vec("cpu", "3", "memory", "1Gi", "pods", "1"),
		},
		"sidecars add to app containers and to later init containers": {
			// App phase: 1 + 1 = 2 cpu. Init phase: sidecar 1 + init 2 = 3 cpu.
			pod:  makePod("p", "n").Container("cpu", "1").Sidecar("cpu", "1").InitContainer("cpu", "2").Obj(),
			want: vec("cpu", "3", "pods", "1"),
		},
		"an init container before a sidecar does not add the sidecar": {
			// Init phase peak is 2 (alone); app phase is 1 + 1.5.
			pod:  makePod("p", "n").Container("cpu", "1").InitContainer("cpu", "2").Sidecar("cpu", "1500m").Obj(),
			want: vec("cpu", "2500m", "pods", "1"),
		},
		"overhead is added": {
			pod:  makePod("p", "n").Container("cpu", "1").Overhead("cpu", "250m", "memory", "120Mi").Obj(),
			want: vec("cpu", "1250m", "memory", "120Mi", "pods", "1"),
		},
		"extended resources are counted": {
			pod:  makePod("p", "n").Container("nvidia.com/gpu", "2").Obj(),
			want: vec("nvidia.com/gpu", "2", "pods", "1"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PodRequests(tc.pod)); diff != "" {
				t.Errorf("PodRequests (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestNodeAccounting(t *testing.T) {
	node := makeNode("n").Resources("cpu", "4", "memory", "8Gi", "pods", "10").Obj()
	cases := map[string]struct {
		pods          []*corev1.Pod
		wantRequested Vector
		wantFree      Vector
	}{
		"running and pending pods count": {
			pods: []*corev1.Pod{
				makePod("a", "n").Container("cpu", "1").Obj(),
				makePod("b", "n").Container("cpu", "1", "memory", "1Gi").Phase(corev1.PodPending).Obj(),
			},
			wantRequested: vec("cpu", "2", "memory", "1Gi", "pods", "2"),
			wantFree:      vec("cpu", "2", "memory", "7Gi", "pods", "8"),
		},
		"terminal pods are ignored": {
			pods: []*corev1.Pod{
				makePod("a", "n").Container("cpu", "1").Obj(),
				makePod("b", "n").Container("cpu", "1").Phase(corev1.PodSucceeded).Obj(),
				makePod("c", "n").Container("cpu", "1").Phase(corev1.PodFailed).Obj(),
			},
			wantRequested: vec("cpu", "1", "pods", "1"),
			wantFree:      vec("cpu", "3", "memory", "8Gi", "pods", "9"),
		},
		"pods bound elsewhere or unbound are ignored": {
			pods: []*corev1.Pod{
				makePod("a", "other").Container("cpu", "1").Obj(),
				makePod("b", "").Container("cpu", "1").Obj(),
			},
			wantFree: vec("cpu", "4", "memory", "8Gi", "pods", "10"),
		},
		"over-commitment floors free at zero": {
			pods: []*corev1.Pod{
				makePod("a", "n").Container("cpu", "3").Obj(),
				makePod("b", "n").Container("cpu", "3", "example.com/foo", "1").Obj(),
			},
			wantRequested: vec("cpu", "6", "example.com/foo", "1", "pods", "2"),
			wantFree:      vec("memory", "8Gi", "pods", "8"),
		},
		"a pod that terminates gives its resources back": {
			pods: []*corev1.Pod{
				makePod("a", "n").Container("cpu", "1").Obj(),
				makePod("a", "n").Container("cpu", "1").Phase(corev1.PodSucceeded).Obj(),
			},
			wantFree: vec("cpu", "4", "memory", "8Gi", "pods", "10"),
		},
		"a pod updated in place replaces its old requests": {
			pods: []*corev1.Pod{
				makePod("a", "n").Container("cpu", "1").Obj(),
				makePod("a", "n").Container("cpu", "2").Obj(),
			},
			wantRequested: vec("cpu", "2", "pods", "1"),
			wantFree:      vec("cpu", "2", "memory", "8Gi", "pods", "9"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, err := NewCluster(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			c.UpsertNode(node)
			for _, p := range tc.pods {
				c.UpsertPod(p)
			}
			info, ok := c.Node("n")
			if !ok {
				t.Fatal("node n not found")
			}
			if diff := cmp.Diff(tc.wantRequested, info.Requested, cmp.Comparer(Vector.Equal)); diff != "" {
				t.Errorf("requested (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFree, info.Free(), cmp.Comparer(Vector.Equal)); diff != "" {
				t.Errorf("free (-want,+got):\n%s", diff)
			}
		})
	}
}
