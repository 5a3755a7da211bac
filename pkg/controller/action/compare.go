package action

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// sameSpec reports whether a stored ManifestWork's spec already holds what delivery wants
// written. The two are never equal as Go values: the stored manifests come back as raw JSON
// while delivery builds them as objects, and the API server fills the CRD's defaults (each
// manifest config's feedbackScrapeType). Written every time, each sync of an intent would
// rewrite every one of its ManifestWorks, with an event each, whenever anything requeued it
// (a work agent's status update, say) — so manifests are compared as JSON values, and the rest
// with the defaults delivery leaves to the API server filled in.
func sameSpec(stored, want workv1.ManifestWorkSpec) bool {
	if len(stored.Workload.Manifests) != len(want.Workload.Manifests) {
		return false
	}
	for i := range want.Workload.Manifests {
		if !sameJSON(stored.Workload.Manifests[i].RawExtension, want.Workload.Manifests[i].RawExtension) {
			return false
		}
	}
	s, w := stored.DeepCopy(), want.DeepCopy()
	s.Workload.Manifests, w.Workload.Manifests = nil, nil
	for _, spec := range []*workv1.ManifestWorkSpec{s, w} {
		for k := range spec.ManifestConfigs {
			if spec.ManifestConfigs[k].FeedbackScrapeType == "" {
				spec.ManifestConfigs[k].FeedbackScrapeType = workv1.FeedbackPollType
			}
		}
	}
	return equality.Semantic.DeepEqual(s, w)
}

// sameJSON reports whether two manifests encode the same JSON value, whether they hold raw
// bytes or an object.
func sameJSON(a, b runtime.RawExtension) bool {
	va, okA := jsonValue(a)
	vb, okB := jsonValue(b)
	return okA && okB && equality.Semantic.DeepEqual(va, vb)
}

func jsonValue(r runtime.RawExtension) (any, bool) {
	raw := r.Raw
	if raw == nil && r.Object != nil {
		var err error
		if raw, err = json.Marshal(r.Object); err != nil {
			return nil, false
		}
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, false
	}
	return v, true
}
