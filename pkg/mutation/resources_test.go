package mutation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMutateResources(t *testing.T) {
	init := ctr("init", rl("cpu", "100m"), rl("cpu", "200m"))
	cases := map[string]struct {
		init       []corev1.Container
		containers []corev1.Container
		m          Mutation
		want       []corev1.Container
		wantInit   []corev1.Container
	}{
		"first container by default, others and init containers untouched": {
			init:       []corev1.Container{init},
			containers: []corev1.Container{ctr("app", nil, nil), ctr("sidecar", rl("cpu", "50m"), nil)},
			m:          Mutation{Requests: rl("cpu", "2", "memory", "1Gi")},
			want:       []corev1.Container{ctr("app", rl("cpu", "2", "memory", "1Gi"), nil), ctr("sidecar", rl("cpu", "50m"), nil)},
			wantInit:   []corev1.Container{init},
		},
		"named container": {
			containers: []corev1.Container{ctr("sidecar", nil, nil), ctr("app", nil, nil)},
			m:          Mutation{Container: "app", Requests: rl("cpu", "2"), Limits: rl("cpu", "3")},
			want:       []corev1.Container{ctr("sidecar", nil, nil), ctr("app", rl("cpu", "2"), rl("cpu", "3"))},
		},
		"other resources kept, cpu overwritten": {
			containers: []corev1.Container{ctr("app",
				rl("cpu", "500m", "memory", "1Gi", "ephemeral-storage", "2Gi"),
				rl("cpu", "4", "memory", "1Gi", "ephemeral-storage", "2Gi"))},
			m: Mutation{Requests: rl("cpu", "2")},
			want: []corev1.Container{ctr("app",
				rl("cpu", "2", "memory", "1Gi", "ephemeral-storage", "2Gi"),
				rl("cpu", "4", "memory", "1Gi", "ephemeral-storage", "2Gi"))},
		},
		"a limit without a request sets the request too": {
			containers: []corev1.Container{ctr("app", rl("memory", "128Mi"), nil)},
			m:          Mutation{Limits: rl("memory", "2Gi")},
			want:       []corev1.Container{ctr("app", rl("memory", "2Gi"), rl("memory", "2Gi"))},
		},
		"an extended resource request gets an equal limit": {
			containers: []corev1.Container{ctr("app", nil, nil)},
			m:          Mutation{Requests: rl("nvidia.com/gpu", "1", "hugepages-2Mi", "64Mi", "cpu", "1")},
			want: []corev1.Container{ctr("app",
				rl("nvidia.com/gpu", "1", "hugepages-2Mi", "64Mi", "cpu", "1"),
				rl("nvidia.com/gpu", "1", "hugepages-2Mi", "64Mi"))},
		},
		"exclusiveCPU makes requests equal limits": {
			containers: []corev1.Container{ctr("fw", rl("cpu", "1", "memory", "512Mi"), rl("cpu", "8", "memory", "4Gi"))},
			m:          Mutation{ExclusiveCPU: true, Requests: rl("cpu", "4", "memory", "1G"), Limits: rl("cpu", "4", "memory", "1G")},
			want:       []corev1.Container{ctr("fw", rl("cpu", "4", "memory", "1G"), rl("cpu", "4", "memory", "1G"))},
		},
		"exclusiveCPU takes the request over a limit the manifest has": {
			containers: []corev1.Container{ctr("fw", nil, rl("cpu", "8", "memory", "4Gi"))},
			m:          Mutation{ExclusiveCPU: true, Requests: rl("cpu", "4")},
			want:       []corev1.Container{ctr("fw", rl("cpu", "4", "memory", "4Gi"), rl("cpu", "4", "memory", "4Gi"))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := pod(&corev1.PodSpec{InitContainers: tc.init, Containers: tc.containers})
			if err := mutateTwice(t, obj, tc.m); err != nil {
				t.Fatalf("Mutate failed: %v", err)
			}
			want := pod(&corev1.PodSpec{InitContainers: tc.wantInit, Containers: tc.want})
			if diff := cmp.Diff(want.Object, obj.Object); diff != "" {
				t.Errorf("Unexpected pod (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestMutateResourcesAsNumbers checks amounts a manifest writes as numbers,
// such as cpu: 2, which JSON decodes to int64 and float64.
func TestMutateResourcesAsNumbers(t *testing.T) {
	obj := pod(&corev1.PodSpec{Containers: []corev1.Container{ctr("app", nil, nil)}})
	c := obj.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	c["resources"] = map[string]any{"limits": map[string]any{"cpu": int64(2), "memory": float64(1 << 30)}}
	if err := mutateTwice(t, obj, Mutation{Requests: rl("cpu", "1500m", "memory", "1Gi")}); err != nil {
		t.Fatalf("Mutate failed: %v", err)
	}
	want := map[string]any{
		"requests": map[string]any{"cpu": "1500m", "memory": "1Gi"},
		"limits":   map[string]any{"cpu": int64(2), "memory": float64(1 << 30)},
	}
	if diff := cmp.Diff(want, c["resources"]); diff != "" {
		// c is the old map when Mutate replaced the pod spec; look it up again.
		got, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "containers")
		if diff := cmp.Diff(want, got.([]any)[0].(map[string]any)["resources"]); diff != "" {
			t.Errorf("Unexpected resources (-want,+got):\n%s", diff)
		}
	}
	if err := Mutate(obj, Mutation{Requests: rl("cpu", "3")}); err == nil {
		t.Error("Mutate accepted a cpu request of 3 above the manifest's limit of 2")
	}
}

func TestMutateResourceErrors(t *testing.T) {
	cases := map[string]struct {
		containers []corev1.Container
		// limits replaces the first container's limits, as a manifest may
		// write them.
		limits map[string]any
		m      Mutation
		want   string
	}{
		"a request above the limit the manifest keeps": {
			containers: []corev1.Container{ctr("nginx", nil, rl("memory", "100Mi"))},
			m:          Mutation{Requests: rl("memory", "200M")},
			want:       `Pod w: container "nginx": memory request 200M would exceed the manifest's limit 100Mi; raise the limit in the manifest or give the requirement limits`,
		},
		"exclusiveCPU without a memory amount": {
			containers: []corev1.Container{ctr("fw", nil, nil)},
			m:          Mutation{ExclusiveCPU: true, Requests: rl("cpu", "4"), Limits: rl("cpu", "4")},
			want:       `Pod w: container "fw": exclusiveCPU needs Guaranteed QoS, but the container has no memory amount; set a memory requirement`,
		},
		"an amount that is not a quantity": {
			containers: []corev1.Container{ctr("app", nil, nil)},
			limits:     map[string]any{"cpu": true},
			m:          Mutation{Requests: rl("cpu", "1")},
			want:       `Pod w: container "app": spec.containers[0].resources.limits[cpu]: the boolean true is not a quantity`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := pod(&corev1.PodSpec{Containers: tc.containers})
			if tc.limits != nil {
				if err := unstructured.SetNestedMap(obj.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any), tc.limits, "resources", "limits"); err != nil {
					t.Fatal(err)
				}
			}
			before := obj.DeepCopy()
			err := Mutate(obj, tc.m)
			if err == nil {
				t.Fatal("Mutate succeeded, want an error")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Unexpected error (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object, obj.Object); diff != "" {
				t.Errorf("A failed Mutate changed the object (-before,+after):\n%s", diff)
			}
		})
	}
}
