package hpa

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// ReasonPlacementNotFound is the reason of a False Valid condition whose
// intent names a Placement that does not exist. It is written by the
// validation controller and read by the placement controller, so it lives
// here, beside the other facts about an intent that both rely on.
const ReasonPlacementNotFound = "PlacementNotFound"

// ReasonIncomplete is the reason of a False Valid condition whose intent has
// no consumers, or a consumer without requirements: one being built step by
// step, as EMCO's API builds intents. Like any invalid intent it holds its
// Placement's decisions; it is no fault, so it is reported without warnings.
const ReasonIncomplete = "Incomplete"

// Incomplete reports whether the validation controller found the intent's
// current generation incomplete.
func Incomplete(in *v1alpha1.HPAIntent) bool {
	cond := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionValid)
	return cond != nil && cond.ObservedGeneration == in.Generation && cond.Status == metav1.ConditionFalse && cond.Reason == ReasonIncomplete
}

// IsValid reports what the Valid condition says about the intent's current
// generation: known is false while the validation controller has not judged
// that generation yet, and valid is then false too. A caller that waits for
// the verdict must watch for changes of the Valid condition, not only of the
// intent's generation: writing the condition does not change the generation.
func IsValid(in *v1alpha1.HPAIntent) (valid, known bool) {
	cond := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionValid)
	if cond == nil || cond.ObservedGeneration != in.Generation || cond.Status == metav1.ConditionUnknown {
		return false, false
	}
	return cond.Status == metav1.ConditionTrue, true
}

// PlacementMissing reports whether the validation controller found the
// intent's Placement missing, whatever generation it judged.
func PlacementMissing(in *v1alpha1.HPAIntent) bool {
	cond := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionValid)
	return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == ReasonPlacementNotFound
}
