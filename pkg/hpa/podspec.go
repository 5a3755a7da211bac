package hpa

import (
	"maps"
	"slices"
)

// PodSpecPath returns the fields under which objects of a kind keep their pod
// spec, such as spec.template.spec for a Deployment, and false for a kind no
// consumer can target. The slice is the caller's to keep.
func PodSpecPath(kind string) ([]string, bool) {
	path, ok := podSpecPaths[kind]
	return slices.Clone(path), ok
}

// PodSpecKinds returns the kinds PodSpecPath knows, sorted, for messages that
// list them.
func PodSpecKinds() []string {
	return slices.Sorted(maps.Keys(podSpecPaths))
}
