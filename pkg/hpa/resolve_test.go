package hpa

import (
	"strings"
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

func TestResolveProblems(t *testing.T) {
	webConsumer := utiltesting.MakeConsumer("web").Target("Deployment", "web", "nginx").
		Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj())
	web := utiltesting.MakeHPAIntent("web", ns).Placement("p").Consumer(webConsumer.Obj())
	coreFwall := func(containers ...corev1.Container) *v1alpha1.HPAIntent {
		return utiltesting.FwallHPAIntent(ns).
			Manifest(statefulSet("core-fwall", nil, containers...)).
			Manifest(deployment("api-server", nil, container(utiltesting.FwallAPIContainer, "", "", "", ""))).Obj()
	}
	unsupported := web.Clone().Obj()
	unsupported.Spec.Consumers[0].Target.Kind = "ConfigMap"

	cases := map[string]struct {
		intent *v1alpha1.HPAIntent
		want   []Problem
	}{
		"target missing from the workload": {
			intent: web.Clone().Manifest(deployment("frontend", nil, container("nginx", "", "", "", ""))).Obj(),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: "target Deployment web (apps/v1) is not among spec.workload.manifests (Deployment objects there: frontend); add it to the workload or fix target.kind and target.name"}},
		},
		"target with another apiVersion": {
			intent: web.Clone().Manifest(map[string]any{
				"apiVersion": "apps/v1beta2", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "nginx"}}}}},
			}).Obj(),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: "target Deployment web has apiVersion apps/v1, but spec.workload.manifests[0] is Deployment web with apiVersion apps/v1beta2; set target.apiVersion to apps/v1beta2"}},
		},
		"target container missing": {
			intent: coreFwall(container("fw", "4", "4", "1G", "1G"), container("sidecar", "1", "1", "1G", "1G")),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: utiltesting.FwallCoreConsumer,
				Message: `target StatefulSet core-fwall has no container "palo-alto-e3000" (containers: fw, sidecar); set target.container to one of them`}},
		},
		"unsupported kind": {
			intent: unsupported,
			want: []Problem{{Reason: ReasonInvalidRequirements,
				Message: `spec.consumers[0].target.kind: Unsupported value: "ConfigMap": supported values: "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"`}},
		},
		"exclusiveCPU with a Burstable sidecar": {
			intent: coreFwall(container(utiltesting.FwallCoreContainer, "", "", "", ""), container("sidecar", "100m", "200m", "64Mi", "")),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: utiltesting.FwallCoreConsumer,
				Message: `exclusiveCPU needs Guaranteed QoS for the whole pod, but container "sidecar" of StatefulSet core-fwall: cpu requests 100m differ from limits 200m, memory has no limits; give it cpu and memory limits in the manifest, with requests equal to them or unset`}},
		},
		"exclusiveCPU with a BestEffort init container": {
			intent: utiltesting.FwallHPAIntent(ns).
				Manifest(&appsv1.StatefulSet{
					TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
					ObjectMeta: metav1.ObjectMeta{Name: "core-fwall"},
					Spec: appsv1.StatefulSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						InitContainers: []corev1.Container{container("init", "", "", "", "")},
						Containers:     []corev1.Container{container(utiltesting.FwallCoreContainer, "", "", "", "")},
					}}},
				}).
				Manifest(deployment("api-server", nil, container(utiltesting.FwallAPIContainer, "", "", "", ""))).Obj(),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: utiltesting.FwallCoreConsumer,
				Message: `exclusiveCPU needs Guaranteed QoS for the whole pod, but init container "init" of StatefulSet core-fwall: cpu has no limits, memory has no limits; give it cpu and memory limits in the manifest, with requests equal to them or unset`}},
		},
		"exclusiveCPU with fractional cpu": {
			intent: utiltesting.MakeHPAIntent("x", ns).Placement("p").Consumer(
				utiltesting.MakeConsumer("x").Target("Pod", "x", "x").ExclusiveCPU().Requirement(
					utiltesting.MakeResource("cpu", "cpu").Requests("1500m").Limits("1500m").Obj(),
					utiltesting.MakeResource("memory", "memory").Limits("1Gi").Obj(),
				).Obj()).Obj(),
			want: []Problem{{Reason: ReasonInvalidRequirements,
				Message: "spec.consumers[0].exclusiveCPU: Invalid value: true: exclusiveCPU needs a mandatory cpu requirement with whole cores and requests equal to limits (Guaranteed QoS), e.g. requests: 4, limits: 4"}},
		},
		"target in two namespaces": {
			intent: web.Clone().
				Manifest(&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "a"}}).
				Manifest(&appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "b"}}).Obj(),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: `target Deployment web matches manifests[0] (namespace "a") and manifests[1] (namespace "b"); a consumer binds to one object, so give the others different names`}},
		},
		"target without a pod template": {
			intent: web.Clone().Manifest(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}}).Obj(),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: "target Deployment web has no pod spec at spec.template.spec; add one"}},
		},
		"two mandatory amounts of one resource": {
			intent: web.Clone().Consumer(utiltesting.MakeConsumer("api").Target("Deployment", "api", "api").Requirement(
				utiltesting.MakeResource("small", "memory").Requests("1Gi").Obj(),
				utiltesting.MakeResource("large", "memory").Requests("2Gi").Obj(),
				utiltesting.MakeResource("preferred", "memory").Requests("4Gi").Optional(2).Obj(),
			).Obj()).Obj(),
			want: []Problem{{Reason: ReasonInvalidRequirements,
				Message: `spec.consumers[1].requirements[1].resource.name: Invalid value: "memory": two mandatory requirements ask for amounts of the same resource, but a container has one request and one limit per resource; keep one of them, or make the other optional`}},
		},
		"deployment replicas beyond int32": {
			intent: web.Clone().Manifest(withCount(webDeployment(), 4294967297, "spec", "replicas")).Obj(),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: "Deployment web has spec.replicas 4294967297, out of range: Kubernetes takes 0 to 2147483647; fix the manifest"}},
		},
		"negative deployment replicas": {
			intent: web.Clone().Manifest(withCount(webDeployment(), -1, "spec", "replicas")).Obj(),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: "Deployment web has spec.replicas -1, out of range: Kubernetes takes 0 to 2147483647; fix the manifest"}},
		},
		"job parallelism 1e30 is out of range, not fractional": {
			intent: jobIntent(withCount(webJob(), 1e30, "spec", "parallelism")),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: "Job web has spec.parallelism 1e+30, out of range: Kubernetes takes 0 to 2147483647; fix the manifest"}},
		},
		"job completions of 2.5": {
			intent: jobIntent(withCount(webJob(), 2.5, "spec", "completions")),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: "Job web has spec.completions 2.5, which is not a whole number; fix the manifest"}},
		},
		"cronjob parallelism beyond int32": {
			intent: cronJobIntent(withCount(webCronJob(), 2147483648, "spec", "jobTemplate", "spec", "parallelism")),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "web",
				Message: "CronJob web has spec.jobTemplate.spec.parallelism 2147483648, out of range: Kubernetes takes 0 to 2147483647; fix the manifest"}},
		},
		"manifest that is not an object": {
			intent: web.Clone().Manifest(map[string]any{"kind": "Deployment"}).Obj(),
			want: []Problem{{Reason: ReasonInvalidWorkload,
				Message: "spec.workload.manifests[0] is not a Kubernetes object: apiVersion, kind or metadata.name is missing; each manifest needs apiVersion, kind and metadata.name"}},
		},
		"a pod label that keeps a machine type's consumer from being its guest": {
			intent: func() *v1alpha1.HPAIntent {
				xlarge := utiltesting.MakeRequirement("xlarge").Obj()
				xlarge.MachineType = &v1alpha1.MachineTypeRequirement{Group: "general-machine", Name: "compute-xlarge"}
				d := deployment("trainer", nil, container("train", "", "", "", ""))
				d.Spec.Template.Labels = map[string]string{"app": "trainer", "machines.fleetfit.io/machine-type": "compute-medium"}
				return utiltesting.MakeHPAIntent("trainer", ns).Placement("p").Consumer(
					utiltesting.MakeConsumer("trainer").Target("Deployment", "trainer", "train").Requirement(xlarge).Obj(),
				).Manifest(d).Obj()
			}(),
			want: []Problem{{Reason: ReasonInvalidWorkload, Consumer: "trainer",
				Message: "target Deployment trainer has the pod label machines.fleetfit.io/machine-type=compute-medium at spec.template.metadata.labels, " +
					"but the consumer's pods are guests of general-machine/compute-xlarge (machines.fleetfit.io/machine-type=compute-xlarge); remove the label from the manifest"}},
		},
		"every consumer's problem is reported": {
			intent: utiltesting.FwallHPAIntent(ns).Manifest(deployment("other", nil, container("c", "", "", "", ""))).Obj(),
			want: []Problem{
				{Reason: ReasonInvalidWorkload, Consumer: utiltesting.FwallCoreConsumer,
					Message: "target StatefulSet core-fwall (apps/v1) is not among spec.workload.manifests (StatefulSet objects there: none); add it to the workload or fix target.kind and target.name"},
				{Reason: ReasonInvalidWorkload, Consumer: utiltesting.FwallAPIConsumer,
					Message: "target Deployment api-server (apps/v1) is not among spec.workload.manifests (Deployment objects there: other); add it to the workload or fix target.kind and target.name"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Resolve(tc.intent)
			if err == nil {
				t.Fatalf("Resolve returned %+v, want an error", got)
			}
			if got != nil {
				t.Errorf("Resolve returned %+v with its error, want nil", got)
			}
			var problems []Problem
			for _, p := range Problems(err) {
				problems = append(problems, *p)
			}
			if diff := cmp.Diff(tc.want, problems); diff != "" {
				t.Errorf("problems (-want,+got):\n%s", diff)
			}
			if want := tc.want[0].Reason; ReasonOf(err) != want {
				t.Errorf("ReasonOf = %s, want %s", ReasonOf(err), want)
			}
			for _, p := range tc.want {
				if !strings.Contains(err.Error(), p.Message) {
					t.Errorf("error %q does not contain %q", err.Error(), p.Message)
				}
			}
		})
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

// webPodTemplate is a pod template with the container nginx, as a manifest
// holds it.
func webPodTemplate() map[string]any {
	return map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "nginx"}}}}
}

func webDeployment() map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"template": webPodTemplate()}}
}

func webJob() map[string]any {
	return map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"template": webPodTemplate()}}
}

func webCronJob() map[string]any {
	return map[string]any{"apiVersion": "batch/v1", "kind": "CronJob", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": webPodTemplate()}}}}
}

// withCount sets a count at path in a manifest, whose maps on the way
// exist; the manifest reaches the hub in JSON, as the number n.
func withCount(m map[string]any, n float64, path ...string) map[string]any {
	inner := m
	for _, k := range path[:len(path)-1] {
		inner = inner[k].(map[string]any)
	}
	inner[path[len(path)-1]] = n
	return m
}

// jobIntent and cronJobIntent are the web intent targeting the manifest's Job or CronJob.
func jobIntent(m map[string]any) *v1alpha1.HPAIntent {
	return utiltesting.MakeHPAIntent("web", ns).Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("Job", "web", "nginx").
			Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj()).Manifest(m).Obj()
}

func cronJobIntent(m map[string]any) *v1alpha1.HPAIntent {
	return utiltesting.MakeHPAIntent("web", ns).Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("CronJob", "web", "nginx").
			Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj()).Manifest(m).Obj()
}
