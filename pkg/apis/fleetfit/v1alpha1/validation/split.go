package validation

import (
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Messages of spec.split's CEL rules, word for word.
const (
	msgSplitKind        = "split divides a workload's replicas, so its consumers must target a Deployment, StatefulSet, ReplicaSet or Job: a DaemonSet runs one pod per node, and a Pod or a CronJob has no replicas to divide; remove split, or give the workload an HPAIntent of its own"
	msgSplitOneObject   = "split divides the replicas of one workload object, so all consumers must target the same object (containers of one pod); give each other workload an HPAIntent of its own"
	msgSplitMinOverSum  = "split.minReplicas is more than the consumers' replicas, the total to divide, so no cluster could get its smallest share; lower minReplicas or raise replicas"
	msgSplitWeightsOnly = "weights are read only when by is Weights: set by: Weights, or remove weights"
	msgSplitNeedWeights = "by: Weights needs weights: give at least one cluster selector with its weight"
	maxSplitWeights     = 32
)

// splitKinds are the kinds whose replicas a split divides.
var splitKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "ReplicaSet": true, "Job": true}

// validateSplit checks what the CRD's schema and rules check of spec.split.
func validateSplit(spec *v1alpha1.HPAIntentSpec, path *field.Path) field.ErrorList {
	s := spec.Split
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	switch s.By {
	case "", v1alpha1.SplitByCapacity, v1alpha1.SplitEvenly, v1alpha1.SplitByWeights:
	default:
		errs = append(errs, field.NotSupported(path.Child("by"), s.By,
			[]string{string(v1alpha1.SplitByCapacity), string(v1alpha1.SplitEvenly), string(v1alpha1.SplitByWeights)}))
	}
	if s.MinReplicas != nil {
		errs = append(errs, validateMinimum(path.Child("minReplicas"), int64(*s.MinReplicas), 1)...)
	}
	weights := path.Child("weights")
	errs = append(errs, validateMaxItems(weights, len(s.Weights), maxSplitWeights)...)
	for i := range s.Weights {
		w := &s.Weights[i]
		errs = append(errs, validateMinimum(weights.Index(i).Child("weight"), int64(w.Weight), 0)...)
		errs = append(errs, validateMaximum(weights.Index(i).Child("weight"), int64(w.Weight), 1000)...)
		errs = append(errs, metav1validation.ValidateLabelSelector(&w.ClusterSelector, metav1validation.LabelSelectorValidationOptions{},
			weights.Index(i).Child("clusterSelector"))...)
	}
	if len(s.Weights) > 0 && s.By != v1alpha1.SplitByWeights {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgSplitWeightsOnly))
	}
	if s.By == v1alpha1.SplitByWeights && len(s.Weights) == 0 {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgSplitNeedWeights))
	}
	if len(spec.Consumers) == 0 {
		return errs
	}
	first := spec.Consumers[0].Target
	kinds, one, minOver := true, true, false
	for i := range spec.Consumers {
		c := &spec.Consumers[i]
		kinds = kinds && splitKinds[c.Target.Kind]
		one = one && c.Target.APIVersion == first.APIVersion && c.Target.Kind == first.Kind && c.Target.Name == first.Name
		minOver = minOver || s.MinReplicas != nil && c.Replicas != nil && *c.Replicas < *s.MinReplicas
	}
	if !kinds {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgSplitKind))
	}
	if !one {
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, msgSplitOneObject))
	}
	if minOver {
		errs = append(errs, field.Invalid(path.Child("minReplicas"), *s.MinReplicas, msgSplitMinOverSum))
	}
	return errs
}
