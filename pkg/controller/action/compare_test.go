package action

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestSameSpec(t *testing.T) {
	deploy := func(replicas int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "ns"},
			"spec":     map[string]any{"replicas": replicas},
		}}
	}
	config := func(scrape workv1.FeedbackScrapeType) []workv1.ManifestConfigOption {
		return []workv1.ManifestConfigOption{{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Name: "web", Namespace: "ns"},
			FeedbackRules:      []workv1.FeedbackRule{{Type: workv1.WellKnownStatusType}},
			FeedbackScrapeType: scrape,
		}}
	}
	want := func(replicas int64) workv1.ManifestWorkSpec {
		return workv1.ManifestWorkSpec{
			Workload:        workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{Object: deploy(replicas)}}}},
			ManifestConfigs: config(""),
		}
	}
	// As the API server returns it: raw JSON in its own key order, the CRD's default filled in.
	stored := workv1.ManifestWorkSpec{
		Workload: workv1.ManifestsTemplate{Manifests: []workv1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"kind":"Deployment","spec":{"replicas":3},"apiVersion":"apps/v1","metadata":{"namespace":"ns","name":"web"}}`),
		}}}},
		ManifestConfigs: config(workv1.FeedbackPollType),
	}
	tests := map[string]struct {
		stored, want workv1.ManifestWorkSpec
		same         bool
	}{
		"as stored":             {stored: stored, want: want(3), same: true},
		"another replica count": {stored: stored, want: want(4)},
		"another feedback scrape type": {stored: stored, want: func() workv1.ManifestWorkSpec {
			w := want(3)
			w.ManifestConfigs = config(workv1.FeedbackWatchType)
			return w
		}()},
		"a manifest more": {stored: stored, want: func() workv1.ManifestWorkSpec {
			w := want(3)
			w.Workload.Manifests = append(w.Workload.Manifests, w.Workload.Manifests[0])
			return w
		}()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := sameSpec(tc.stored, tc.want); got != tc.same {
				t.Errorf("sameSpec() = %v, want %v", got, tc.same)
			}
		})
	}
}
