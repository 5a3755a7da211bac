package mutation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/hpa"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const avxKey = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

// fwall resolves EMCO's firewall example with its workload: the StatefulSet
// core-fwall, whose container palo-alto-e3000 has no resources of its own
// next to a Guaranteed log shipper and init container, and the Deployment
// api-server. Its core-fwall consumer also optionally wants AVX-512.
func fwall(t *testing.T) *hpa.Resolved {
	t.Helper()
	guaranteed := ctr("log-shipper", rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "100m", "memory", "64Mi"))
	initGuaranteed := ctr("init", nil, rl("cpu", "1", "memory", "128Mi"))
	intent := utiltesting.FwallHPAIntent("ns").
		Manifest(&appsv1.StatefulSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "core-fwall"},
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{initGuaranteed},
				Containers:     []corev1.Container{ctr(utiltesting.FwallCoreContainer, nil, nil), guaranteed},
			}}},
		}).
		Manifest(&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "api-server"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{ctr("istio-proxy", nil, nil), ctr(utiltesting.FwallAPIContainer, nil, nil)},
			}}},
		}).Obj()
	intent.Spec.Consumers[0].Requirements = append(intent.Spec.Consumers[0].Requirements,
		utiltesting.MakeFeature("avx512", avxKey).Value("true").Optional(3).Obj())
	r, err := hpa.Resolve(intent)
	if err != nil {
		t.Fatalf("Resolving the fwall example: %v", err)
	}
	return r
}

func TestForConsumer(t *testing.T) {
	avx := corev1.NodeSelectorRequirement{Key: avxKey, Operator: corev1.NodeSelectorOpIn, Values: []string{"true"}}
	coreRequests := rl("cpu", "4", "memory", "1G")
	cases := map[string]struct {
		consumer string
		optional []string
		want     Mutation
		wantErr  string
	}{
		"core-fwall, mandatory only": {
			consumer: utiltesting.FwallCoreConsumer,
			want: Mutation{
				Container: utiltesting.FwallCoreContainer, ExclusiveCPU: true,
				Requests: coreRequests, Limits: coreRequests,
			},
		},
		"core-fwall on a cluster with GPUs and AVX-512": {
			consumer: utiltesting.FwallCoreConsumer,
			optional: []string{"avx512", utiltesting.FwallGPURequirement},
			want: Mutation{
				Container: utiltesting.FwallCoreContainer, ExclusiveCPU: true,
				Requests:    rl("cpu", "4", "memory", "1G", utiltesting.FwallGPUResourceName, "1"),
				Limits:      rl("cpu", "4", "memory", "1G", utiltesting.FwallGPUResourceName, "1"),
				Features:    []corev1.NodeSelectorRequirement{avx},
				Tolerations: []corev1.Toleration{gpuToleration},
			},
		},
		"api-server": {
			consumer: utiltesting.FwallAPIConsumer,
			want: Mutation{
				Container: utiltesting.FwallAPIContainer,
				Requests:  rl("cpu", "1", "memory", "200M"),
				Limits:    rl("cpu", "2"),
			},
		},
		"an optional requirement the consumer does not have": {
			consumer: utiltesting.FwallAPIConsumer,
			optional: []string{utiltesting.FwallGPURequirement},
			wantErr:  `consumer "api-server" has no optional requirement "gpu" (optional requirements: none)`,
		},
		"unknown names are listed with the known ones": {
			consumer: utiltesting.FwallCoreConsumer,
			optional: []string{"tpu", utiltesting.FwallGPURequirement, "fpga"},
			wantErr:  `consumer "core-fwall" has no optional requirement "fpga", "tpu" (optional requirements: "gpu", "avx512")`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := fwall(t)
			c := consumer(t, r, tc.consumer)
			before := consumer(t, fwall(t), tc.consumer)
			got, err := ForConsumer(r, c, tc.optional)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ForConsumer returned error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ForConsumer failed: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, quantityEqual); diff != "" {
				t.Errorf("Unexpected mutation (-want,+got):\n%s", diff)
			}
			// The mutation shares nothing with the consumer.
			got.Requests[corev1.ResourceCPU] = resource.MustParse("64")
			got.Limits[corev1.ResourceCPU] = resource.MustParse("64")
			for i := range got.Features {
				got.Features[i].Values = append(got.Features[i].Values[:0], "changed")
			}
			if diff := cmp.Diff(before, c, quantityEqual); diff != "" {
				t.Errorf("Changing the mutation changed the consumer (-before,+after):\n%s", diff)
			}
		})
	}
}

// TestFwallStatefulSetGuaranteed delivers the fwall example's StatefulSet to a
// cluster with GPUs: the firewall container gets its exclusive cores, memory
// and GPU, and the pod ends up Guaranteed.
func TestFwallStatefulSetGuaranteed(t *testing.T) {
	r := fwall(t)
	c := consumer(t, r, utiltesting.FwallCoreConsumer)
	m, err := ForConsumer(r, c, []string{utiltesting.FwallGPURequirement})
	if err != nil {
		t.Fatalf("ForConsumer failed: %v", err)
	}
	obj := r.Manifests[c.Manifest].DeepCopy()
	if err := mutateTwice(t, obj, m); err != nil {
		t.Fatalf("Mutate failed: %v", err)
	}
	var sts appsv1.StatefulSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &sts); err != nil {
		t.Fatalf("Decoding the mutated StatefulSet: %v", err)
	}
	spec := &sts.Spec.Template.Spec
	want := corev1.ResourceRequirements{
		Requests: rl("cpu", "4", "memory", "1G", "nvidia.com/gpu", "1"),
		Limits:   rl("cpu", "4", "memory", "1G", "nvidia.com/gpu", "1"),
	}
	if diff := cmp.Diff(want, spec.Containers[0].Resources, quantityEqual); diff != "" {
		t.Errorf("Unexpected resources of %s (-want,+got):\n%s", utiltesting.FwallCoreContainer, diff)
	}
	if diff := cmp.Diff([]corev1.Toleration{gpuToleration}, spec.Tolerations); diff != "" {
		t.Errorf("Unexpected tolerations (-want,+got):\n%s", diff)
	}
	if msg := notGuaranteed(spec); msg != "" {
		t.Errorf("The pod is not Guaranteed: %s", msg)
	}
	if got := sts.Spec.Replicas; got == nil || *got != 2 {
		t.Errorf("Replicas changed to %v, want 2", got)
	}
}

// consumer returns the resolved consumer of that name.
func consumer(t *testing.T, r *hpa.Resolved, name string) *hpa.Consumer {
	t.Helper()
	for i := range r.Consumers {
		if r.Consumers[i].Name == name {
			return &r.Consumers[i]
		}
	}
	t.Fatalf("No consumer %q", name)
	return nil
}

// notGuaranteed says why a pod would not get Guaranteed QoS, as Kubernetes
// decides it: every container and init container needs cpu and memory limits
// with requests equal to them (an absent request defaults to the limit).
func notGuaranteed(spec *corev1.PodSpec) string {
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l, ok := c.Resources.Limits[name]
			if !ok {
				return string(name) + " limit missing on " + c.Name
			}
			if r, ok := c.Resources.Requests[name]; ok && r.Cmp(l) != 0 {
				return string(name) + " request differs from limit on " + c.Name
			}
		}
	}
	return ""
}
