package action

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// TestKeepJobTemplates: a Job delivered before pods carried the intent's labels keeps its pod
// template (it cannot change); a Job delivered with them, a new Job and a Deployment get them.
func TestKeepJobTemplates(t *testing.T) {
	obj := func(apiVersion, kind, name string, labels map[string]string) *unstructured.Unstructured {
		o := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "ns"}}}
		if labels != nil {
			l := map[string]any{}
			for k, v := range labels {
				l[k] = v
			}
			_ = unstructured.SetNestedMap(o.Object, l, "spec", "template", "metadata", "labels")
		}
		return o
	}
	ours := map[string]string{fleetfitv1alpha1.LabelIntentNamespace: "ns", fleetfitv1alpha1.LabelIntentName: "web", "app": "web"}
	work := func(raw bool, objs ...*unstructured.Unstructured) *workv1.ManifestWork {
		w := &workv1.ManifestWork{}
		for _, o := range objs {
			m := workv1.Manifest{RawExtension: runtime.RawExtension{Object: o}}
			if raw {
				b, err := json.Marshal(o.Object)
				if err != nil {
					t.Fatal(err)
				}
				m = workv1.Manifest{RawExtension: runtime.RawExtension{Raw: b}}
			}
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, m)
		}
		return w
	}
	stored := work(true,
		obj("batch/v1", "Job", "old", map[string]string{"app": "web"}),
		obj("batch/v1", "Job", "bare", nil),
		obj("batch/v1", "Job", "labelled", ours),
		obj("apps/v1", "Deployment", "web", map[string]string{"app": "web"}),
		obj("example.com/v1", "Job", "custom", nil),
	)
	want := work(false,
		obj("batch/v1", "Job", "old", ours),
		obj("batch/v1", "Job", "bare", map[string]string{fleetfitv1alpha1.LabelIntentNamespace: "ns", fleetfitv1alpha1.LabelIntentName: "web"}),
		obj("batch/v1", "Job", "labelled", ours),
		obj("batch/v1", "Job", "new", ours),
		obj("apps/v1", "Deployment", "web", ours),
		obj("example.com/v1", "Job", "custom", ours),
	)
	keepJobTemplates(stored, want)
	got := map[string]map[string]string{}
	for _, m := range want.Spec.Workload.Manifests {
		o, ok := manifestObject(m.RawExtension)
		if !ok {
			t.Fatalf("manifest does not decode: %v", m)
		}
		labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		got[o.GetKind()+"/"+o.GetName()] = labels
	}
	wantLabels := map[string]map[string]string{
		"Job/old":        {"app": "web"},
		"Job/bare":       nil,
		"Job/labelled":   ours,
		"Job/new":        ours,
		"Deployment/web": ours,
		"Job/custom":     ours,
	}
	if diff := cmp.Diff(wantLabels, got); diff != "" {
		t.Errorf("pod template labels (-want,+got):\n%s", diff)
	}

	first := work(false, obj("batch/v1", "Job", "old", ours))
	keepJobTemplates(nil, first)
	if o, _ := manifestObject(first.Spec.Workload.Manifests[0].RawExtension); !cmp.Equal(ours, mustLabels(o)) {
		t.Errorf("a first delivery's Job lost its labels: %v", mustLabels(o))
	}
}

func mustLabels(o *unstructured.Unstructured) map[string]string {
	l, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
	return l
}
