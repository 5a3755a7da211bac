package action

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// keepJobTemplates leaves off the intent's labels from the pod template of every Job that the
// stored ManifestWork delivered without them. A Job's pod template cannot change once the Job
// exists, so adding the labels to a Job delivered before pods carried them would only make
// the work agent fail to apply it: that Job keeps its template, and its pods go unreported
// (they are not moved when they wait) until the Job is delivered anew. want is changed in
// place; stored may be nil (a first delivery labels every Job).
func keepJobTemplates(stored *workv1.ManifestWork, want *workv1.ManifestWork) {
	if stored == nil {
		return
	}
	unlabelled := map[[2]string]bool{}
	for _, m := range stored.Spec.Workload.Manifests {
		o, ok := manifestObject(m.RawExtension)
		if !ok || !isBatchJob(o) {
			continue
		}
		labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		if _, has := labels[fleetfitv1alpha1.LabelIntentName]; !has {
			unlabelled[[2]string{o.GetNamespace(), o.GetName()}] = true
		}
	}
	if len(unlabelled) == 0 {
		return
	}
	for i, m := range want.Spec.Workload.Manifests {
		o, ok := manifestObject(m.RawExtension)
		if !ok || !isBatchJob(o) || !unlabelled[[2]string{o.GetNamespace(), o.GetName()}] {
			continue
		}
		o = o.DeepCopy()
		labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		delete(labels, fleetfitv1alpha1.LabelIntentNamespace)
		delete(labels, fleetfitv1alpha1.LabelIntentName)
		if len(labels) == 0 {
			unstructured.RemoveNestedField(o.Object, "spec", "template", "metadata", "labels")
		} else if err := unstructured.SetNestedStringMap(o.Object, labels, "spec", "template", "metadata", "labels"); err != nil {
			continue
		}
		want.Spec.Workload.Manifests[i].RawExtension = runtime.RawExtension{Object: o}
	}
}

func isBatchJob(o *unstructured.Unstructured) bool {
	return o.GetKind() == "Job" && o.GroupVersionKind().Group == "batch"
}

// manifestObject decodes a manifest, whether it holds an object or raw bytes.
func manifestObject(r runtime.RawExtension) (*unstructured.Unstructured, bool) {
	if u, ok := r.Object.(*unstructured.Unstructured); ok {
		return u, true
	}
	if len(r.Raw) == 0 {
		return nil, false
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(r.Raw, &u.Object); err != nil {
		return nil, false
	}
	return u, true
}
