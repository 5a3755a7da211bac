package hpa

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

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
