package mutation

import (
	"fmt"
	"maps"
	"slices"
)

// podMetadataPath returns where an object keeps the metadata of its pods,
// given where it keeps their spec: the template's metadata beside the
// template's spec, or a Pod's own metadata.
func podMetadataPath(specPath []string) []string {
	return append(slices.Clone(specPath[:len(specPath)-1]), "metadata")
}

// addLabels returns a copy of the labels of meta, the unstructured pod
// metadata at at, with labels added; nil when it already has them all, so
// that the caller writes nothing. A label the pods already have with another
// value is an error: the pods would not be what fleetfit delivers (a machine
// group's guest, an HPAIntent's pods), and overwriting it could take them out
// of their workload's selector.
func addLabels(meta map[string]any, at string, labels map[string]string) (map[string]any, error) {
	if len(labels) == 0 {
		return nil, nil
	}
	have, err := mapAt(meta, at, "labels")
	if err != nil {
		return nil, err
	}
	out := maps.Clone(have)
	if out == nil {
		out = map[string]any{}
	}
	added := false
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		want := labels[key]
		v, ok := out[key]
		if !ok {
			out[key] = want
			added = true
			continue
		}
		got, isString := v.(string)
		if !isString {
			return nil, fmt.Errorf("%s.labels[%s] is %s, not a string", at, key, describe(v))
		}
		if got != want {
			return nil, fmt.Errorf("%s.labels[%s] is %q where fleetfit delivers the pods with %q; remove the label from the manifest",
				at, key, got, want)
		}
	}
	if !added {
		return nil, nil
	}
	return out, nil
}
