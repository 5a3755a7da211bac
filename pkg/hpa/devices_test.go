package hpa

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// claimingDeployment is a Deployment whose pod claims the template gpus.
func claimingDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "train"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers:     []corev1.Container{{Name: "main", Image: "pause", Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpus")}},
			}},
		},
	}
}

func claimTemplate(req resourcev1.DeviceRequest) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: ResourceClaimTemplateKind},
		ObjectMeta: metav1.ObjectMeta{Name: "gpus"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{req},
		}}},
	}
}

func TestDevicesOfTheWorkload(t *testing.T) {
	a100 := []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.attributes["gpu.example.com"].model == "A100"`}}}
	intent := func(req resourcev1.DeviceRequest, own ...v1alpha1.ResourceRequirement) *v1alpha1.HPAIntent {
		c := ut.MakeConsumer("train").Target("Deployment", "train", "main").Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj())
		c.Requirement(own...)
		return ut.MakeHPAIntent("train", "ns").Placement("p").Consumer(c.Obj()).Manifest(claimTemplate(req)).Manifest(claimingDeployment()).Obj()
	}
	t.Run("a template's request is the pod's", func(t *testing.T) {
		in := intent(resourcev1.DeviceRequest{Name: "g", Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 2, Selectors: a100}},
			v1alpha1.ResourceRequirement{Name: "nic", Devices: &v1alpha1.DeviceRequirement{DeviceClassName: "nic.example.com"}})
		compiled, err := Compile(in)
		if err != nil {
			t.Fatal(err)
		}
		pod := &compiled.Pods[0]
		want := []Device{
			{Name: "nic", Class: "nic.example.com", Count: 1},
			{Name: "gpu/g", Class: "gpu.example.com", Count: 2, Selectors: []string{a100[0].CEL.Expression}, FromWorkload: true},
		}
		if diff := cmp.Diff(want, pod.Devices); diff != "" {
			t.Errorf("devices (-want +got):\n%s", diff)
		}
		if got := len(pod.Request.Devices()); got != 2 {
			t.Errorf("the pod's request counts %d device requests, want 2", got)
		}
		if got := len(compiled.Consumers[0].Request.Devices()); got != 0 {
			t.Errorf("the consumer's own request counts %d device requests; devices are the pod's", got)
		}
		// 2 replicas of 3 devices each, as the pseudo resource reservations compare.
		if q := compiled.Amounts()["fleetfit.io/dra-devices-in-use"]; q.Value() != 6 {
			t.Errorf("amounts count %v devices in use, want 6", q.String())
		}
	})
	for name, tc := range map[string]struct {
		req  resourcev1.DeviceRequest
		want string
	}{
		"all of a node's devices": {
			req:  resourcev1.DeviceRequest{Name: "g", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeAll}},
			want: "allocationMode All takes every matching device of a node",
		},
		"a list of alternatives": {
			req:  resourcev1.DeviceRequest{Name: "g", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: "gpu.example.com"}}},
			want: "a list of alternatives (firstAvailable) cannot be counted ahead",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Compile(intent(tc.req))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
