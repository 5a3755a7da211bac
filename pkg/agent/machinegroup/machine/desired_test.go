package machine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// xlargeGroup is Imperator's example group with its compute-xlarge type.
func xlargeGroup() *v1alpha1.MachineGroup {
	xl := makeType("compute-xlarge", "40000m", "128Gi", 2, 1)
	xl.Spec.GPU.Product = "NVIDIA-GeForce-RTX-3090"
	return makeGroup(xl)
}

func TestDesiredStatefulSet(t *testing.T) {
	g := xlargeGroup()
	labels := map[string]string{
		"machines.fleetfit.io/machine-group": "general-machine",
		"machines.fleetfit.io/machine-type":  "compute-xlarge",
		"machines.fleetfit.io/pod-role":      "reservation",
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("40"),
		corev1.ResourceMemory: resource.MustParse("128Gi"),
		"nvidia.com/gpu":      resource.MustParse("2"),
	}
	owner := metav1.OwnerReference{APIVersion: "fleetfit.io/v1alpha1", Kind: "MachineGroup", Name: "general-machine", UID: "group-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	in := func(k, v string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{v}}
	}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "reservation", Image: "example.com/idle:1",
				Resources: corev1.ResourceRequirements{Requests: res, Limits: res},
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Tolerations: []corev1.Toleration{
				{Key: "machines.fleetfit.io/compute-xlarge", Operator: corev1.TolerationOpEqual, Value: "general-machine", Effect: corev1.TaintEffectNoSchedule},
				{Key: "machines.fleetfit.io/node-pool", Operator: corev1.TolerationOpEqual, Value: "ready", Effect: corev1.TaintEffectNoSchedule},
			},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					in("machines.fleetfit.io/compute-xlarge", "general-machine"),
					in("machines.fleetfit.io/node-pool", "ready"),
					in("nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-3090"),
				}}},
			}}},
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65535),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	want := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: "compute-xlarge-general-machine", Namespace: "reservations", Labels: labels,
			Annotations:     map[string]string{AnnotationTemplateHash: templateHash(&template)},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](1),
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			ServiceName:         "compute-xlarge-general-machine",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Template:            template,
		},
	}
	got := desiredStatefulSet(g, &g.Spec.MachineTypes[0], 1, Options{Namespace: "reservations", ReservationImage: "example.com/idle:1"})
	quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	if diff := cmp.Diff(want, got, quantities); diff != "" {
		t.Errorf("desiredStatefulSet (-want,+got):\n%s", diff)
	}

	// The hash follows the template and nothing else.
	other := desiredStatefulSet(g, &g.Spec.MachineTypes[0], 7, Options{Namespace: "reservations", ReservationImage: "example.com/idle:1"})
	if other.Annotations[AnnotationTemplateHash] != got.Annotations[AnnotationTemplateHash] {
		t.Errorf("the template hash changes with the replicas")
	}
	g.Spec.MachineTypes[0].Spec.GPU.Num = 1
	if h := desiredStatefulSet(g, &g.Spec.MachineTypes[0], 1, Options{ReservationImage: "example.com/idle:1"}).Annotations[AnnotationTemplateHash]; h == got.Annotations[AnnotationTemplateHash] {
		t.Errorf("the template hash does not change with the resources")
	}
}

func TestDesiredService(t *testing.T) {
	g := xlargeGroup()
	labels := map[string]string{
		"machines.fleetfit.io/machine-group": "general-machine",
		"machines.fleetfit.io/machine-type":  "compute-xlarge",
		"machines.fleetfit.io/pod-role":      "reservation",
	}
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: "compute-xlarge-general-machine", Namespace: "reservations", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "fleetfit.io/v1alpha1", Kind: "MachineGroup", Name: "general-machine", UID: "group-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels},
	}
	if diff := cmp.Diff(want, desiredService(g, &g.Spec.MachineTypes[0], "reservations")); diff != "" {
		t.Errorf("desiredService (-want,+got):\n%s", diff)
	}
}

func TestNewDefaults(t *testing.T) {
	f := newFixture(t)
	if f.c.opts.ReservationImage != "registry.k8s.io/pause:3.10" {
		t.Errorf("default image %q", f.c.opts.ReservationImage)
	}
	c := New(f.kube, f.fleetfit, Options{})
	if c.opts.Namespace != DefaultNamespace {
		t.Errorf("default namespace %q", c.opts.Namespace)
	}
}
