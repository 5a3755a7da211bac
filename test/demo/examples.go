package demo

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// Namespace holds the demo's Placements and HPAIntents on the hub, and their workloads on the
// managed clusters.
const Namespace = "demo"

// Example is one application of the demo: a Placement for one cluster and the HPAIntent
// that names it, with the workload to deliver there.
type Example struct {
	Placement *clusterv1beta1.Placement
	Intent    *v1alpha1.HPAIntent
	// Replicas is how many pods the workload runs.
	Replicas int32
}

// Examples are the demo's applications: EMCO's usage example from its HPA placement intent
// design, and two that ask for a GPU model and a CPU feature.
//
//   - fwall (EMCO): core-fwall, a StatefulSet, wants 4 exclusive cores and 1000 MB, and a GPU
//     if there is one (optional, weight 9); api-server, a Deployment of 2, 1 to 2 cores and
//     200 MB.
//   - analytics (EMCO): ai-model, a StatefulSet, wants 2 cores; logger, a Deployment, a
//     QuickAssist accelerator (intel.com/qat).
//   - training: trainer wants an A100 GPU, 4 cores and 16Gi on the same node.
//   - inference: 2 replicas of 1 core and 2Gi each on nodes with AVX-512.
//
// The workloads say nothing about hardware: each HPAIntent's requirements are added to their
// pod templates when they are delivered.
func Examples() []Example {
	fwall := ut.FwallHPAIntent(Namespace).
		Manifest(statefulSet("core-fwall", ut.FwallCoreContainer, 1)).
		Manifest(deployment("api-server", ut.FwallAPIContainer, 2))
	analytics := ut.MakeHPAIntent("analytics", Namespace).Placement("analytics").Consumer(
		ut.MakeConsumer("ai-model").Target("StatefulSet", "ai-model", "openvino").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("2").Obj(),
		).Obj(),
		ut.MakeConsumer("logger").Target("Deployment", "logger", "logger").Requirement(
			ut.MakeResource("qat", string(ResourceQAT)).Requests("1").Limits("1").Obj(),
		).Obj(),
	).Manifest(statefulSet("ai-model", "openvino", 1)).Manifest(deployment("logger", "logger", 1))
	training := ut.MakeHPAIntent("training", Namespace).Placement("training").Consumer(
		ut.MakeConsumer("trainer").Target("Deployment", "trainer", "trainer").Requirement(
			ut.MakeResource("gpu", string(ResourceGPU)).Limits("1").Obj(),
			ut.MakeResource("cpu", "cpu").Requests("4").Obj(),
			ut.MakeResource("memory", "memory").Requests("16Gi").Obj(),
			ut.MakeFeature("a100", LabelGPUProduct).Operator(corev1.NodeSelectorOpIn).Values("A100").Obj(),
		).Obj(),
	).Manifest(deployment("trainer", "trainer", 1))
	inference := ut.MakeHPAIntent("inference", Namespace).Placement("inference").Consumer(
		ut.MakeConsumer("inference").Target("Deployment", "inference", "server").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("1").Obj(),
			ut.MakeResource("memory", "memory").Requests("2Gi").Obj(),
			ut.MakeFeature("avx512", LabelAVX512).Operator(corev1.NodeSelectorOpExists).Obj(),
		).Obj(),
	).Manifest(deployment("inference", "server", 2))
	var out []Example
	for _, w := range []*ut.HPAIntentWrapper{fwall, analytics, training, inference} {
		in := w.Obj()
		out = append(out, Example{Placement: placement(in.Spec.PlacementRef.Name), Intent: in, Replicas: replicas(in)})
	}
	return out
}

// replicas adds up spec.replicas of the intent's workload.
func replicas(in *v1alpha1.HPAIntent) int32 {
	var n int32
	for _, m := range in.Spec.Workload.Manifests {
		var obj struct {
			Spec struct {
				Replicas *int32 `json:"replicas"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			// The manifests are built above from typed objects.
			panic(fmt.Sprintf("decoding a manifest of %s: %v", in.Name, err))
		}
		n += ptr.Deref(obj.Spec.Replicas, 1)
	}
	return n
}

// placement asks for one cluster of the cluster sets bound to the namespace.
func placement(name string) *clusterv1beta1.Placement {
	return ut.MakePlacement(name, Namespace).NumberOfClusters(1).Obj()
}

func podTemplate(app, container string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: container, Image: "registry.k8s.io/pause:3.10",
		}}},
	}
}

func deployment(name, container string, replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: podTemplate(name, container),
		},
	}
}

func statefulSet(name, container string, replicas int32) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template:    podTemplate(name, container),
		},
	}
}
