package injector

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
)

// patchOp is one operation of a JSON patch (RFC 6902).
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// jsonPatch turns what pkg/mutation changed in a pod into a JSON patch: the
// resources of each container whose resources changed, the affinity and the
// tolerations, each set whole with "add", which sets an object's member
// whether or not it exists. pkg/mutation changes nothing else, and never the
// list of containers. It returns nil when nothing changed.
func jsonPatch(before, after map[string]any) ([]byte, error) {
	oldSpec, _ := before["spec"].(map[string]any)
	newSpec, _ := after["spec"].(map[string]any)
	if oldSpec == nil || newSpec == nil {
		return nil, fmt.Errorf("the pod has no spec")
	}
	var ops []patchOp
	oldContainers, _ := oldSpec["containers"].([]any)
	newContainers, _ := newSpec["containers"].([]any)
	if len(oldContainers) != len(newContainers) {
		return nil, fmt.Errorf("the pod's containers changed from %d to %d", len(oldContainers), len(newContainers))
	}
	for i := range newContainers {
		o, _ := oldContainers[i].(map[string]any)
		n, _ := newContainers[i].(map[string]any)
		if n == nil || equality.Semantic.DeepEqual(o["resources"], n["resources"]) {
			continue
		}
		ops = append(ops, patchOp{Op: "add", Path: fmt.Sprintf("/spec/containers/%d/resources", i), Value: n["resources"]})
	}
	for _, field := range []string{"affinity", "tolerations"} {
		if equality.Semantic.DeepEqual(oldSpec[field], newSpec[field]) {
			continue
		}
		ops = append(ops, patchOp{Op: "add", Path: "/spec/" + field, Value: newSpec[field]})
	}
	if len(ops) == 0 {
		return nil, nil
	}
	return json.Marshal(ops)
}
