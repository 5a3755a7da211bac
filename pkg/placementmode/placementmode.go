// Package placementmode says which Placements fleetfit-hub schedules: all of
// them, replacing OCM's placement controller, or only those handed to it,
// beside OCM's controller. The hub's flag, the installer and the CLI all parse
// the mode here, so each refuses the same values with the same words.
package placementmode

import (
	"fmt"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// Mode says which Placements fleetfit schedules.
type Mode string

const (
	// All makes fleetfit the hub's placement controller: it schedules every Placement
	// except those with OCM's experimental-scheduling-disable annotation (unless they also
	// carry the fleetfit.io/scheduler label).
	All Mode = "all"
	// Annotated lets fleetfit run beside OCM's placement controller: it schedules only
	// Placements that carry both the disable annotation (so OCM leaves them alone) and the
	// fleetfit.io/scheduler label.
	Annotated Mode = "annotated"

	// SchedulerLabel marks a Placement that fleetfit schedules even though OCM's scheduling is
	// disabled on it.
	SchedulerLabel = "fleetfit.io/scheduler"
)

// ParseMode returns the mode that s names. Its error says which values are
// allowed and which was given, without naming the flag or field, so that the
// caller can prefix it with the name the user wrote.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case All, Annotated:
		return m, nil
	default:
		return "", fmt.Errorf("must be %q or %q, not %q", All, Annotated, s)
	}
}

// Handles reports whether fleetfit schedules the placement in mode m.
func (m Mode) Handles(p *clusterv1beta1.Placement) bool {
	disabled := p.Annotations[clusterv1beta1.PlacementDisableAnnotation] == "true"
	_, labelled := p.Labels[SchedulerLabel]
	if disabled {
		return labelled
	}
	return m == All
}
