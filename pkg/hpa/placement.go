package hpa

import (
	"slices"
	"strings"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// IntentsOf returns the intents among all that shape the Placement namespace/name, sorted
// by name: those of its namespace, not being deleted, whose spec.placementRef names it.
//
// With followScheduled, it also returns those that last shaped it (status.scheduledPlacement)
// and now name another Placement that does not exist (a typo) or that the validation
// controller has not judged yet: the first hold the placement's decisions as an invalid
// intent would, the second make it wait for the verdict. The placement controller follows
// that history; a simulation, which schedules each placement as on a first pass, does not.
//
// The result holds the pointers of all, so that a caller may update what they point to.
// Whether each intent is valid is left to the caller (see IsValid).
func IntentsOf(namespace, name string, all []*v1alpha1.HPAIntent, followScheduled bool) []*v1alpha1.HPAIntent {
	var out []*v1alpha1.HPAIntent
	for _, in := range all {
		if in.Namespace != namespace || !in.DeletionTimestamp.IsZero() {
			continue
		}
		if in.Spec.PlacementRef.Name == name || (followScheduled && in.Status.ScheduledPlacement == name && stillShapes(in)) {
			out = append(out, in)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.HPAIntent) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// PlacementsOf returns the names of the Placements of in's namespace that the intent may
// shape, sorted and without repeats: the one its spec.placementRef names and the one it last
// shaped (status.scheduledPlacement). Every placement for which IntentsOf, following history
// or not, returns in is among them, so an index of intents by these names, or a handler
// that requeues these placements when the intent changes, misses no placement whose
// intents changed.
func PlacementsOf(in *v1alpha1.HPAIntent) []string {
	names := make([]string, 0, 2)
	for _, name := range []string{in.Spec.PlacementRef.Name, in.Status.ScheduledPlacement} {
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// stillShapes reports whether an intent that now names another Placement still counts for
// the one it last shaped: its new Placement is missing, or not judged yet.
func stillShapes(in *v1alpha1.HPAIntent) bool {
	_, known := IsValid(in)
	return PlacementMissing(in) || !known
}
