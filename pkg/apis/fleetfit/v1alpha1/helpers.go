package v1alpha1

// IsMandatory reports whether the requirement must be met; requirements are
// mandatory unless they say otherwise.
func (r *ResourceRequirement) IsMandatory() bool {
	return r.Mandatory == nil || *r.Mandatory
}

// EffectiveWeight is the weight of an optional requirement (1 when unset) and
// 0 for a mandatory one, which filters instead of scoring.
func (r *ResourceRequirement) EffectiveWeight() int32 {
	if r.IsMandatory() {
		return 0
	}
	if r.Weight == nil {
		return 1
	}
	return *r.Weight
}
