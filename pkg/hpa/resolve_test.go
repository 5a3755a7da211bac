package hpa

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const ns = "apps"

func q(s string) resource.Quantity { return resource.MustParse(s) }

// container is a container with cpu and memory requests and limits; an empty
// string leaves that amount unset.
func container(name, cpuRequest, cpuLimit, memRequest, memLimit string) corev1.Container {
	c := corev1.Container{Name: name, Image: "registry.example/" + name}
	set := func(list *corev1.ResourceList, n corev1.ResourceName, v string) {
		if v == "" {
			return
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[n] = q(v)
	}
	set(&c.Resources.Requests, corev1.ResourceCPU, cpuRequest)
	set(&c.Resources.Limits, corev1.ResourceCPU, cpuLimit)
	set(&c.Resources.Requests, corev1.ResourceMemory, memRequest)
	set(&c.Resources.Limits, corev1.ResourceMemory, memLimit)
	return c
}

func podTemplate(containers ...corev1.Container) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: containers}}
}

func statefulSet(name string, replicas *int32, containers ...corev1.Container) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.StatefulSetSpec{Replicas: replicas, Template: podTemplate(containers...)},
	}
}

func deployment(name string, replicas *int32, containers ...corev1.Container) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       appsv1.DeploymentSpec{Replicas: replicas, Template: podTemplate(containers...)},
	}
}

// fwallWithWorkload is the fwall example with manifests for both targets:
// core-fwall has a Guaranteed sidecar and 2 replicas, api-server 3 replicas.
func fwallWithWorkload() *utiltesting.HPAIntentWrapper {
	return utiltesting.FwallHPAIntent(ns).
		Manifest(statefulSet("core-fwall", ptr.To[int32](2),
			container(utiltesting.FwallCoreContainer, "", "", "", ""),
			container("log-shipper", "100m", "100m", "64Mi", "64Mi"))).
		Manifest(deployment("api-server", ptr.To[int32](3), container(utiltesting.FwallAPIContainer, "", "", "", "")))
}

// fwallConsumers is what the fwall example resolves to, without a workload.
func fwallConsumers() []Consumer {
	return []Consumer{
		{
			Name:         utiltesting.FwallCoreConsumer,
			Target:       v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "core-fwall", Container: utiltesting.FwallCoreContainer},
			Manifest:     -1,
			Replicas:     1,
			ExclusiveCPU: true,
			// 1000 in units MB is 1000M, i.e. 10^9 bytes.
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("1000000000")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("4"), corev1.ResourceMemory: q("1G")},
			Optional: []OptionalRequirement{{
				Name:     utiltesting.FwallGPURequirement,
				Weight:   9,
				Requests: corev1.ResourceList{utiltesting.FwallGPUResourceName: q("1")},
				Limits:   corev1.ResourceList{utiltesting.FwallGPUResourceName: q("1")},
			}},
		},
		{
			Name:     utiltesting.FwallAPIConsumer,
			Target:   v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "api-server", Container: utiltesting.FwallAPIContainer},
			Manifest: -1,
			Replicas: 1,
			Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("200M")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: q("2")},
		},
	}
}

func TestResolve(t *testing.T) {
	withWorkload := fwallConsumers()
	withWorkload[0].Manifest, withWorkload[0].Replicas = 0, 2
	withWorkload[1].Manifest, withWorkload[1].Replicas = 1, 3

	gpuFeature := utiltesting.MakeConsumer("gpu").Target("Deployment", "trainer", "")

	cases := map[string]struct {
		intent *v1alpha1.HPAIntent
		want   []Consumer
	}{
		"fwall example without a workload": {
			intent: utiltesting.FwallHPAIntent(ns).Obj(),
			want:   fwallConsumers(),
		},
		"replicas from the workload": {
			intent: fwallWithWorkload().Obj(),
			want:   withWorkload,
		},
		"spec replicas win over the workload's": {
			intent: utiltesting.MakeHPAIntent("web", ns).Placement("p").
				Consumer(utiltesting.MakeConsumer("web").Target("Deployment", "web", "nginx").Replicas(5).
					Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("500m").Obj()).Obj()).
				Manifest(deployment("web", ptr.To[int32](2), container("nginx", "", "", "", ""))).Obj(),
			want: []Consumer{{
				Name:     "web",
				Target:   v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "nginx"},
				Replicas: 5,
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m")},
				Limits:   corev1.ResourceList{},
			}},
		},
		"deployment without spec.replicas has 1": {
			intent: utiltesting.MakeHPAIntent("web", ns).Placement("p").
				Consumer(utiltesting.MakeConsumer("web").Target("Deployment", "web", "nginx").
					Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj()).
				Manifest(deployment("web", nil, container("nginx", "", "", "", ""))).Obj(),
			want: []Consumer{{
				Name:     "web",
				Target:   v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Container: "nginx"},
				Replicas: 1,
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("1")},
				Limits:   corev1.ResourceList{},
			}},
		},
		"job replicas are its parallelism, capped by completions": {
			intent: utiltesting.MakeHPAIntent("batch", ns).Placement("p").
				Consumer(utiltesting.MakeConsumer("train").Target("Job", "train", "worker").
					Requirement(utiltesting.MakeResource("gpu", "nvidia.com/gpu").Limits("1").Obj()).Obj()).
				Manifest(&batchv1.Job{
					TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
					ObjectMeta: metav1.ObjectMeta{Name: "train"},
					Spec: batchv1.JobSpec{Parallelism: ptr.To[int32](8), Completions: ptr.To[int32](3),
						Template: podTemplate(container("worker", "", "", "", ""))},
				}).Obj(),
			want: []Consumer{{
				Name:     "train",
				Target:   v1alpha1.ConsumerTarget{APIVersion: "batch/v1", Kind: "Job", Name: "train", Container: "worker"},
				Replicas: 3,
				// Limits only: requests = limits.
				Requests: corev1.ResourceList{"nvidia.com/gpu": q("1")},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": q("1")},
			}},
		},
		"cronjob replicas are its job template's parallelism": {
			intent: utiltesting.MakeHPAIntent("nightly", ns).Placement("p").
				Consumer(utiltesting.MakeConsumer("report").Target("CronJob", "report", "worker").
					Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("2").Obj()).Obj()).
				Manifest(&batchv1.CronJob{
					TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "CronJob"},
					ObjectMeta: metav1.ObjectMeta{Name: "report"},
					Spec: batchv1.CronJobSpec{Schedule: "0 1 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
						Parallelism: ptr.To[int32](2), Template: podTemplate(container("worker", "", "", "", "")),
					}}},
				}).Obj(),
			want: []Consumer{{
				Name:     "report",
				Target:   v1alpha1.ConsumerTarget{APIVersion: "batch/v1", Kind: "CronJob", Name: "report", Container: "worker"},
				Replicas: 2,
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")},
				Limits:   corev1.ResourceList{},
			}},
		},
		"bare pod of any apiVersion, second among the manifests": {
			intent: utiltesting.MakeHPAIntent("pod", ns).Placement("p").
				Consumer(utiltesting.MakeConsumer("pod").Target("Pod", "probe", "probe").
					Requirement(utiltesting.MakeResource("qat", "intel.com/qat").Requests("1").Limits("1").Obj()).Obj()).
				Manifest(&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "probe"}}).
				Manifest(&corev1.Pod{
					TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
					ObjectMeta: metav1.ObjectMeta{Name: "probe"},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{container("probe", "", "", "", "")}},
				}).Obj(),
			want: []Consumer{{
				Name:     "pod",
				Target:   v1alpha1.ConsumerTarget{APIVersion: "v1", Kind: "Pod", Name: "probe", Container: "probe"},
				Manifest: 1,
				Replicas: 1,
				Requests: corev1.ResourceList{"intel.com/qat": q("1")},
				Limits:   corev1.ResourceList{"intel.com/qat": q("1")},
			}},
		},
		"daemonset counts as one replica": {
			intent: utiltesting.MakeHPAIntent("agent", ns).Placement("p").
				Consumer(utiltesting.MakeConsumer("agent").Target("DaemonSet", "agent", "").
					Requirement(utiltesting.MakeFeature("sriov", "feature.node.kubernetes.io/network-sriov.capable").Value("true").Obj()).Obj()).
				Manifest(&appsv1.DaemonSet{
					TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
					ObjectMeta: metav1.ObjectMeta{Name: "agent"},
					Spec:       appsv1.DaemonSetSpec{Template: podTemplate(container("agent", "", "", "", ""))},
				}).Obj(),
			want: []Consumer{{
				Name:     "agent",
				Target:   v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent"},
				Replicas: 1,
				Requests: corev1.ResourceList{},
				Limits:   corev1.ResourceList{},
				Features: []corev1.NodeSelectorRequirement{
					{Key: "feature.node.kubernetes.io/network-sriov.capable", Operator: corev1.NodeSelectorOpIn, Values: []string{"true"}},
				},
			}},
		},
		"features with every operator, optional ones weighted": {
			intent: utiltesting.MakeHPAIntent("gpu", ns).Placement("p").
				Consumer(gpuFeature.Requirement(
					utiltesting.MakeFeature("product", "nvidia.com/gpu.product").Values("A100", "H100").Obj(),
					utiltesting.MakeFeature("no-mig", "nvidia.com/mig.capable").Operator(corev1.NodeSelectorOpNotIn).Values("true").Obj(),
					utiltesting.MakeFeature("not-spot", "node.example/spot").Operator(corev1.NodeSelectorOpDoesNotExist).Obj(),
					utiltesting.MakeFeature("avx", "feature.node.kubernetes.io/cpu-cpuid.AVX512F").Operator(corev1.NodeSelectorOpExists).Obj(),
					utiltesting.MakeFeature("memory", "nvidia.com/gpu.memory").Operator(corev1.NodeSelectorOpGt).Values("40000").Optional(3).Obj(),
					utiltesting.MakeFeature("zone", "topology.kubernetes.io/zone").Value("a").Mandatory(false).Obj(),
				).Obj()).Obj(),
			want: []Consumer{{
				Name:     "gpu",
				Target:   v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "trainer"},
				Manifest: -1,
				Replicas: 1,
				Requests: corev1.ResourceList{},
				Limits:   corev1.ResourceList{},
				Features: []corev1.NodeSelectorRequirement{
					{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpIn, Values: []string{"A100", "H100"}},
					{Key: "nvidia.com/mig.capable", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"true"}},
					{Key: "node.example/spot", Operator: corev1.NodeSelectorOpDoesNotExist},
					{Key: "feature.node.kubernetes.io/cpu-cpuid.AVX512F", Operator: corev1.NodeSelectorOpExists},
				},
				Optional: []OptionalRequirement{
					{Name: "memory", Weight: 3, Feature: &corev1.NodeSelectorRequirement{Key: "nvidia.com/gpu.memory", Operator: corev1.NodeSelectorOpGt, Values: []string{"40000"}}},
					{Name: "zone", Weight: 1, Feature: &corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}},
				},
			}},
		},
		"limits only, in legacy units": {
			intent: utiltesting.MakeHPAIntent("db", ns).Placement("p").
				Consumer(utiltesting.MakeConsumer("db").Target("StatefulSet", "db", "postgres").Requirement(
					utiltesting.MakeResource("memory", "memory").Limits("2").Units("GiB").Obj(),
					utiltesting.MakeResource("hugepages", "hugepages-2Mi").Limits("512Mi").Obj(),
				).Obj()).Obj(),
			want: []Consumer{{
				Name:     "db",
				Target:   v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", Container: "postgres"},
				Manifest: -1,
				Replicas: 1,
				Requests: corev1.ResourceList{corev1.ResourceMemory: q("2Gi"), "hugepages-2Mi": q("512Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: q("2Gi"), "hugepages-2Mi": q("512Mi")},
			}},
		},
		"exclusiveCPU with a sidecar that another consumer makes Guaranteed": {
			intent: utiltesting.MakeHPAIntent("dpdk", ns).Placement("p").
				Consumer(
					utiltesting.MakeConsumer("fwd").Target("Deployment", "dpdk", "fwd").ExclusiveCPU().Requirement(
						utiltesting.MakeResource("cpu", "cpu").Limits("2").Obj(),
						utiltesting.MakeResource("memory", "memory").Limits("1Gi").Obj(),
					).Obj(),
					utiltesting.MakeConsumer("sidecar").Target("Deployment", "dpdk", "sidecar").Requirement(
						utiltesting.MakeResource("cpu", "cpu").Requests("200m").Limits("200m").Obj(),
					).Obj(),
				).
				// The sidecar's memory is Guaranteed in the manifest, its cpu
				// is not until the sidecar consumer sets it.
				Manifest(deployment("dpdk", nil, container("fwd", "", "", "", ""), container("sidecar", "100m", "", "64Mi", "64Mi"))).Obj(),
			want: []Consumer{
				{
					Name:         "fwd",
					Target:       v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "dpdk", Container: "fwd"},
					Replicas:     1,
					ExclusiveCPU: true,
					Requests:     corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")},
					Limits:       corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("1Gi")},
				},
				{
					Name:     "sidecar",
					Target:   v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "dpdk", Container: "sidecar"},
					Replicas: 1,
					Requests: corev1.ResourceList{corev1.ResourceCPU: q("200m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: q("200m")},
				},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Resolve(tc.intent)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Consumers); diff != "" {
				t.Errorf("consumers (-want,+got):\n%s", diff)
			}
			wantManifests := 0
			if tc.intent.Spec.Workload != nil {
				wantManifests = len(tc.intent.Spec.Workload.Manifests)
			}
			if len(got.Manifests) != wantManifests {
				t.Errorf("got %d decoded manifests, want %d", len(got.Manifests), wantManifests)
			}
		})
	}
}

// TestResolveManifestIndex checks that Consumer.Manifest points at the target.
func TestResolveManifestIndex(t *testing.T) {
	got, err := Resolve(fwallWithWorkload().Obj())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range got.Consumers {
		u := got.Manifests[c.Manifest]
		gotTarget := []string{u.GetAPIVersion(), u.GetKind(), u.GetName()}
		if diff := cmp.Diff([]string{c.Target.APIVersion, c.Target.Kind, c.Target.Name}, gotTarget); diff != "" {
			t.Errorf("consumer %s: manifest (-want,+got):\n%s", c.Name, diff)
		}
	}
}

// TestResolveDoesNotAlias checks that the result shares nothing with the
// intent: the scheduler keeps results while informers hand out the intent.
func TestResolveDoesNotAlias(t *testing.T) {
	in := utiltesting.MakeHPAIntent("x", ns).Placement("p").Consumer(
		utiltesting.MakeConsumer("x").Target("Deployment", "x", "").Requirement(
			utiltesting.MakeFeature("gpu", "nvidia.com/gpu.product").Values("A100").Obj(),
		).Obj()).Obj()
	got, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	got.Consumers[0].Features[0].Values[0] = "changed"
	if v := in.Spec.Consumers[0].Requirements[0].Feature.Values[0]; v != "A100" {
		t.Errorf("changing the result changed the intent: value %q", v)
	}
}
