package action

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func deployment(name, namespace string) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app"}}}},
		},
	}
}

func TestDesiredWork(t *testing.T) {
	in := ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", "app").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("2").Obj(),
			ut.MakeResource("gpu", "nvidia.com/gpu").Limits("1").Optional(5).Obj(),
		).Obj(),
	).Manifest(deployment("web", "")).Manifest(deployment("other", "tools")).Obj()
	r, err := hpa.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	w, err := desiredWork(in, r, "cluster1", map[string][]string{"web": {"gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "shop.web" || w.Namespace != "cluster1" || w.Labels[v1alpha1.LabelIntentNamespace] != "shop" || w.Labels[v1alpha1.LabelIntentName] != "web" {
		t.Errorf("work %s/%s labels %v", w.Namespace, w.Name, w.Labels)
	}
	if got := w.Annotations[AnnotationOptional]; got != "web/gpu" {
		t.Errorf("optional annotation %q, want web/gpu", got)
	}
	var kinds []string
	for _, m := range w.Spec.Workload.Manifests {
		u := m.Object.(*unstructured.Unstructured)
		kinds = append(kinds, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
	}
	want := []string{"Namespace /shop", "Namespace /tools", "Deployment shop/web", "Deployment tools/other"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("manifests (-want,+got):\n%s", diff)
	}
	web := w.Spec.Workload.Manifests[2].Object.(*unstructured.Unstructured)
	containers, _, _ := unstructured.NestedSlice(web.Object, "spec", "template", "spec", "containers")
	res := containers[0].(map[string]any)["resources"].(map[string]any)
	if diff := cmp.Diff(map[string]any{"cpu": "2", "nvidia.com/gpu": "1"}, res["requests"]); diff != "" {
		t.Errorf("requests of the mutated container (-want,+got):\n%s", diff)
	}
	other := w.Spec.Workload.Manifests[3].Object.(*unstructured.Unstructured)
	otherContainers, _, _ := unstructured.NestedSlice(other.Object, "spec", "template", "spec", "containers")
	if res, _ := otherContainers[0].(map[string]any)["resources"].(map[string]any); len(res) > 0 {
		t.Errorf("the untargeted Deployment was mutated: %v", otherContainers[0])
	}
	if w.Spec.DeleteOption == nil || w.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeSelectivelyOrphan ||
		len(w.Spec.DeleteOption.SelectivelyOrphan.OrphaningRules) != 2 {
		t.Errorf("added namespaces must be orphaned on deletion: %+v", w.Spec.DeleteOption)
	}
	if len(w.Spec.ManifestConfigs) != 2 || w.Spec.ManifestConfigs[0].ResourceIdentifier.Resource != "deployments" ||
		w.Spec.ManifestConfigs[0].ResourceIdentifier.Group != "apps" {
		t.Errorf("status feedback configs %+v, want one per Deployment", w.Spec.ManifestConfigs)
	}

	// Building it twice gives the same work: updates are written only on change.
	again, err := desiredWork(in, r, "cluster1", map[string][]string{"web": {"gpu"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w, again); diff != "" {
		t.Errorf("desiredWork is not deterministic (-first,+second):\n%s", diff)
	}
}

// TestDesiredWorkMachineType delivers a consumer that takes a machine type: its Deployment's
// pods are guests of the group, and the namespaces that hold guests, whether the intent
// carries them or fleetfit adds them, opt in to the managed cluster's injector.
func TestDesiredWorkMachineType(t *testing.T) {
	xlarge := ut.MakeRequirement("xlarge").Obj()
	xlarge.MachineType = &v1alpha1.MachineTypeRequirement{Group: "general-machine", Name: "compute-xlarge"}
	namespace := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	optIn := map[string]string{machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled}
	intent := func(manifests ...any) *v1alpha1.HPAIntent {
		w := ut.MakeHPAIntent("trainer", "ml").Placement("trainer").Consumer(
			ut.MakeConsumer("trainer").Target("Deployment", "trainer", "app").Requirement(xlarge).Obj(),
			ut.MakeConsumer("monitor").Target("Deployment", "monitor", "app").Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
		)
		for _, m := range manifests {
			w.Manifest(m)
		}
		return w.Obj()
	}
	cases := map[string]struct {
		in             *v1alpha1.HPAIntent
		wantNamespaces map[string]map[string]string
		wantErr        string
	}{
		"fleetfit adds the namespace of the guests": {
			in: intent(deployment("trainer", ""), deployment("monitor", "tools")),
			wantNamespaces: map[string]map[string]string{
				"ml":    optIn,
				"tools": nil,
			},
		},
		"the workload holds the namespace of the guests": {
			in: intent(namespace("ml", map[string]string{"team": "ml"}), deployment("trainer", ""), namespace("tools", nil), deployment("monitor", "tools")),
			wantNamespaces: map[string]map[string]string{
				"ml":    {"team": "ml", machinegroup.LabelInjectResource: machinegroup.InjectResourceEnabled},
				"tools": nil,
			},
		},
		"the workload opts its namespace in already": {
			in:             intent(namespace("ml", optIn), deployment("trainer", ""), deployment("monitor", "")),
			wantNamespaces: map[string]map[string]string{"ml": optIn},
		},
		"the workload opts its namespace out": {
			in: intent(namespace("ml", map[string]string{machinegroup.LabelInjectResource: "disabled"}), deployment("trainer", ""), deployment("monitor", "")),
			wantErr: `the workload's Namespace ml has the label machines.fleetfit.io/inject-resource="disabled", but its pods take machine types, ` +
				`which the managed cluster's agent gives only to pods of namespaces labelled machines.fleetfit.io/inject-resource=enabled; remove the label`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := hpa.Resolve(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			w, err := desiredWork(tc.in, r, "cluster1", nil)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("desiredWork returned error %v, want %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			gotNamespaces := map[string]map[string]string{}
			podLabels := map[string]map[string]string{}
			for _, m := range w.Spec.Workload.Manifests {
				u := m.Object.(*unstructured.Unstructured)
				switch u.GetKind() {
				case "Namespace":
					gotNamespaces[u.GetName()] = u.GetLabels()
				case "Deployment":
					l, _, err := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
					if err != nil {
						t.Fatal(err)
					}
					podLabels[u.GetName()] = l
					containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
					if res, _ := containers[0].(map[string]any)["resources"].(map[string]any); u.GetName() == "trainer" && len(res) > 0 {
						t.Errorf("the guest's container got resources from the hub: %v", res)
					}
				}
			}
			if diff := cmp.Diff(tc.wantNamespaces, gotNamespaces); diff != "" {
				t.Errorf("Namespaces and their labels (-want,+got):\n%s", diff)
			}
			// Every pod names the intent; the guest's are labelled as guests too.
			intentLabels := map[string]string{v1alpha1.LabelIntentNamespace: "ml", v1alpha1.LabelIntentName: "trainer"}
			guest := machinegroup.GuestLabels("general-machine", "compute-xlarge", "app")
			maps.Copy(guest, intentLabels)
			wantPods := map[string]map[string]string{"trainer": guest, "monitor": intentLabels}
			if diff := cmp.Diff(wantPods, podLabels); diff != "" {
				t.Errorf("Pod template labels (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestDesiredWorkOptionalMachineType: an optional machine type only ranks clusters, so its
// consumer's pods are not guests and their namespace is not opted in to the injector.
func TestDesiredWorkOptionalMachineType(t *testing.T) {
	in := ut.MakeHPAIntent("trainer", "ml").Placement("trainer").Consumer(
		ut.MakeConsumer("trainer").Target("Deployment", "trainer", "app").Requirement(
			ut.MakeMachineTypeRequirement("xlarge", "general-machine", "compute-xlarge").Optional(5).Obj(),
		).Obj(),
	).Manifest(deployment("trainer", "")).Obj()
	r, err := hpa.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	w, err := desiredWork(in, r, "cluster1", map[string][]string{"trainer": {"xlarge"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range w.Spec.Workload.Manifests {
		u := m.Object.(*unstructured.Unstructured)
		if u.GetKind() == "Namespace" {
			if v, ok := u.GetLabels()[machinegroup.LabelInjectResource]; ok {
				t.Errorf("Namespace %s has %s=%s, but no pod of it is a guest", u.GetName(), machinegroup.LabelInjectResource, v)
			}
		}
		if u.GetKind() == "Deployment" {
			l, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
			want := map[string]string{v1alpha1.LabelIntentNamespace: "ml", v1alpha1.LabelIntentName: "trainer"}
			if diff := cmp.Diff(want, l); diff != "" {
				t.Errorf("the Deployment's pods are not guests, and have only the intent's labels (-want,+got):\n%s", diff)
			}
		}
	}
}

// TestDesiredWorkLabelsEveryPod: the pods of every workload the intent delivers, consumers'
// targets or not, carry the intent's labels, so that the managed cluster's agent can report
// them; other objects, and another group's kind of the same name, are left alone. A workload
// whose pods name another intent is refused.
func TestDesiredWorkLabelsEveryPod(t *testing.T) {
	podSpec := map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app"}}}
	template := map[string]any{"spec": podSpec}
	obj := func(apiVersion, kind, name string, spec map[string]any) map[string]any {
		o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
		if spec != nil {
			o["spec"] = spec
		}
		return o
	}
	manifests := []map[string]any{
		obj("apps/v1", "Deployment", "web", map[string]any{"template": template}),
		obj("apps/v1", "StatefulSet", "db", map[string]any{"template": template}),
		obj("apps/v1", "DaemonSet", "agent", map[string]any{"template": template}),
		obj("apps/v1", "ReplicaSet", "rs", map[string]any{"template": template}),
		obj("batch/v1", "Job", "once", map[string]any{"template": template}),
		obj("batch/v1", "CronJob", "nightly", map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": template}}}),
		obj("v1", "Pod", "bare", podSpec),
		obj("v1", "ConfigMap", "config", nil),
		obj("batch.volcano.sh/v1alpha1", "Job", "volcano", map[string]any{"tasks": []any{}}),
	}
	intent := func(extra ...map[string]any) *v1alpha1.HPAIntent {
		w := ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(
			ut.MakeConsumer("web").Target("Deployment", "web", "app").Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj())
		for _, m := range append(manifests, extra...) {
			w.Manifest(&unstructured.Unstructured{Object: runtime.DeepCopyJSON(m)})
		}
		return w.Obj()
	}
	in := intent()
	r, err := hpa.Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	w, err := desiredWork(in, r, "cluster1", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{v1alpha1.LabelIntentNamespace: "shop", v1alpha1.LabelIntentName: "web"}
	got := map[string]map[string]string{}
	for _, m := range w.Spec.Workload.Manifests {
		u := m.Object.(*unstructured.Unstructured)
		path, ok := hpa.PodSpecPath(u.GetKind())
		if !ok {
			continue
		}
		meta := append(slices.Clone(path[:len(path)-1]), "metadata", "labels")
		l, _, err := unstructured.NestedStringMap(u.Object, meta...)
		if err != nil {
			t.Fatal(err)
		}
		got[u.GetAPIVersion()+" "+u.GetKind()] = l
	}
	wantAll := map[string]map[string]string{
		"apps/v1 Deployment": want, "apps/v1 StatefulSet": want, "apps/v1 DaemonSet": want, "apps/v1 ReplicaSet": want,
		"batch/v1 Job": want, "batch/v1 CronJob": want, "v1 Pod": want,
		"batch.volcano.sh/v1alpha1 Job": nil,
	}
	if diff := cmp.Diff(wantAll, got); diff != "" {
		t.Errorf("pod labels by kind (-want,+got):\n%s", diff)
	}

	other := obj("v1", "Pod", "stray", podSpec)
	other["metadata"].(map[string]any)["labels"] = map[string]any{v1alpha1.LabelIntentName: "other"}
	in = intent(other)
	if r, err = hpa.Resolve(in); err != nil {
		t.Fatal(err)
	}
	_, err = desiredWork(in, r, "cluster1", nil)
	wantErr := `Pod stray: metadata.labels[fleetfit.io/hpaintent-name] is "other" where fleetfit delivers the pods with "web"; remove the label from the manifest`
	if err == nil || err.Error() != wantErr {
		t.Errorf("desiredWork returned error %v, want %s", err, wantErr)
	}
}
