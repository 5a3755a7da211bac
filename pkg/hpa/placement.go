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

// stillShapes reports whether an intent that now names another Placement still counts for
// the one it last shaped: its new Placement is missing, or not judged yet.
func stillShapes(in *v1alpha1.HPAIntent) bool {
	_, known := IsValid(in)
	return PlacementMissing(in) || !known
}
