package mutation

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// rl builds a ResourceList from name, quantity pairs.
func rl(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

func ctr(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{
		Name:      name,
		Image:     "registry.example/" + name,
		Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits},
	}
}

var (
	avx512 = corev1.NodeSelectorRequirement{Key: "feature.node.kubernetes.io/cpu-cpuid.AVX512F", Operator: corev1.NodeSelectorOpIn, Values: []string{"true"}}
	sriov  = corev1.NodeSelectorRequirement{Key: "feature.node.kubernetes.io/network-sriov.capable", Operator: corev1.NodeSelectorOpExists}
	zoneA  = corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}

	gpuToleration       = corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	dedicatedToleration = corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "fw", Effect: corev1.TaintEffectNoSchedule}
)

// podSpecAt says where each test kind keeps its pod spec, written out here
// rather than taken from pkg/hpa so that the test checks the paths too.
var podSpecAt = map[string][]string{
	"Deployment":  {"spec", "template", "spec"},
	"StatefulSet": {"spec", "template", "spec"},
	"DaemonSet":   {"spec", "template", "spec"},
	"ReplicaSet":  {"spec", "template", "spec"},
	"Job":         {"spec", "template", "spec"},
	"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
	"Pod":         {"spec"},
}

// object is a workload of a kind with spec as its pod spec, decoded from JSON
// as manifests arrive. Every object carries fields this package does not know,
// in the pod spec and its containers, which must survive a mutation.
func object(apiVersion, kind string, spec *corev1.PodSpec) *unstructured.Unstructured {
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		panic(err)
	}
	raw["futurePodField"] = map[string]any{"keep": true}
	if cs, ok := raw["containers"].([]any); ok {
		for _, c := range cs {
			c.(map[string]any)["futureContainerField"] = "keep"
		}
	}
	obj := map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]any{"name": "w", "namespace": "ns", "labels": map[string]any{"app": "w"}},
	}
	path := podSpecAt[kind]
	if path == nil {
		path = []string{"spec", "template", "spec"}
	}
	if len(path) > 1 {
		// A sibling of the pod spec, such as a replica count, stays as it is.
		if err := unstructured.SetNestedField(obj, int64(3), path[0], "replicas"); err != nil {
			panic(err)
		}
	}
	if err := unstructured.SetNestedMap(obj, raw, path...); err != nil {
		panic(err)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		panic(err)
	}
	return u
}

// pod is a bare Pod with the given pod spec.
func pod(spec *corev1.PodSpec) *unstructured.Unstructured { return object("v1", "Pod", spec) }

// mutateTwice mutates obj, then mutates the result again and fails the test
// unless the second mutation changes nothing.
func mutateTwice(t *testing.T, obj *unstructured.Unstructured, m Mutation) error {
	t.Helper()
	if err := Mutate(obj, m); err != nil {
		return err
	}
	once := obj.DeepCopy()
	if err := Mutate(obj, m); err != nil {
		t.Fatalf("Second Mutate failed: %v", err)
	}
	if diff := cmp.Diff(once.Object, obj.Object); diff != "" {
		t.Errorf("Mutating twice differs from mutating once (-once,+twice):\n%s", diff)
	}
	return nil
}

func TestMutateKinds(t *testing.T) {
	in := func() *corev1.PodSpec {
		return &corev1.PodSpec{
			InitContainers: []corev1.Container{ctr("init", rl("cpu", "100m"), nil)},
			Containers: []corev1.Container{
				ctr("app", rl("cpu", "1", "memory", "1Gi"), rl("memory", "1Gi")),
				ctr("sidecar", rl("cpu", "50m"), nil),
			},
			Tolerations: []corev1.Toleration{dedicatedToleration},
		}
	}
	m := Mutation{
		Requests:    rl("cpu", "2"),
		Limits:      rl("nvidia.com/gpu", "1"),
		Features:    []corev1.NodeSelectorRequirement{avx512},
		Tolerations: []corev1.Toleration{gpuToleration},
	}
	want := in()
	want.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: rl("cpu", "2", "memory", "1Gi", "nvidia.com/gpu", "1"),
		Limits:   rl("memory", "1Gi", "nvidia.com/gpu", "1"),
	}
	want.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{avx512}}},
		},
	}}
	want.Tolerations = append(want.Tolerations, gpuToleration)

	cases := map[string]struct{ apiVersion, kind string }{
		"Deployment apps/v1":          {"apps/v1", "Deployment"},
		"Deployment extensions":       {"extensions/v1beta1", "Deployment"},
		"StatefulSet":                 {"apps/v1", "StatefulSet"},
		"DaemonSet":                   {"apps/v1", "DaemonSet"},
		"ReplicaSet":                  {"apps/v1", "ReplicaSet"},
		"Job":                         {"batch/v1", "Job"},
		"CronJob batch/v1":            {"batch/v1", "CronJob"},
		"CronJob batch/v1beta1":       {"batch/v1beta1", "CronJob"},
		"Pod":                         {"v1", "Pod"},
		"Deployment of another group": {"apps.example.com/v1", "Deployment"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := object(tc.apiVersion, tc.kind, in())
			if err := mutateTwice(t, obj, m); err != nil {
				t.Fatalf("Mutate failed: %v", err)
			}
			if diff := cmp.Diff(object(tc.apiVersion, tc.kind, want).Object, obj.Object); diff != "" {
				t.Errorf("Unexpected object (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestMutateErrors(t *testing.T) {
	twoContainers := &corev1.PodSpec{
		InitContainers: []corev1.Container{ctr("init", nil, nil)},
		Containers:     []corev1.Container{ctr("app", nil, nil), ctr("sidecar", nil, nil)},
	}
	noPodSpec := object("apps/v1", "Deployment", twoContainers)
	unstructured.RemoveNestedField(noPodSpec.Object, "spec", "template")
	wrongType := object("apps/v1", "Deployment", twoContainers)
	if err := unstructured.SetNestedField(wrongType.Object, "none", "spec", "template", "spec", "tolerations"); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		m    Mutation
		want string
	}{
		"unsupported kind": {
			obj:  object("v1", "ConfigMap", twoContainers),
			m:    Mutation{Requests: rl("cpu", "1")},
			want: "ConfigMap w: kind ConfigMap has no pod template to mutate; supported kinds: CronJob, DaemonSet, Deployment, Job, Pod, ReplicaSet, StatefulSet",
		},
		"unsupported kind without amounts": {
			obj:  object("apps/v1", "Workload", twoContainers),
			m:    Mutation{Features: []corev1.NodeSelectorRequirement{avx512}},
			want: "Workload w: kind Workload has no pod template to mutate; supported kinds: CronJob, DaemonSet, Deployment, Job, Pod, ReplicaSet, StatefulSet",
		},
		"missing container": {
			obj:  object("apps/v1", "StatefulSet", twoContainers),
			m:    Mutation{Container: "palo-alto-e3000", Requests: rl("cpu", "1")},
			want: `StatefulSet w: no container "palo-alto-e3000" (containers: "app", "sidecar")`,
		},
		"an init container is not a target": {
			obj:  object("batch/v1", "Job", twoContainers),
			m:    Mutation{Container: "init", Requests: rl("cpu", "1")},
			want: `Job w: no container "init" (containers: "app", "sidecar")`,
		},
		"missing container without amounts": {
			obj:  pod(twoContainers),
			m:    Mutation{Container: "db", Features: []corev1.NodeSelectorRequirement{avx512}},
			want: `Pod w: no container "db" (containers: "app", "sidecar")`,
		},
		"no containers": {
			obj:  pod(&corev1.PodSpec{}),
			m:    Mutation{Requests: rl("cpu", "1")},
			want: "Pod w: the pod has no containers at spec.containers to set resources on",
		},
		"no pod spec": {
			obj:  noPodSpec,
			m:    Mutation{Requests: rl("cpu", "1")},
			want: "Deployment w has no pod spec at spec.template.spec",
		},
		"a field of the wrong type": {
			obj:  wrongType,
			m:    Mutation{Tolerations: []corev1.Toleration{gpuToleration}},
			want: `Deployment w: spec.template.spec.tolerations is the string "none", not a list`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.obj.DeepCopy()
			err := Mutate(tc.obj, tc.m)
			if err == nil {
				t.Fatal("Mutate succeeded, want an error")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Unexpected error (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object, tc.obj.Object); diff != "" {
				t.Errorf("A failed Mutate changed the object (-before,+after):\n%s", diff)
			}
		})
	}
}

// TestMutateNothing checks that an empty mutation leaves the object as it is,
// without creating empty affinity, tolerations or resources.
func TestMutateNothing(t *testing.T) {
	obj := pod(&corev1.PodSpec{Containers: []corev1.Container{ctr("app", nil, nil)}})
	before := obj.DeepCopy()
	if err := Mutate(obj, Mutation{Container: "app"}); err != nil {
		t.Fatalf("Mutate failed: %v", err)
	}
	if diff := cmp.Diff(before.Object, obj.Object); diff != "" {
		t.Errorf("An empty mutation changed the object (-before,+after):\n%s", diff)
	}
}
