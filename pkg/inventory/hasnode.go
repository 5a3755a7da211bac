package inventory

// HasNode reports whether some schedulable node passes sel — has its features and tolerates
// its taints — whatever is free on it; none does when sel needs a label the cluster does not
// report.
func (v *View) HasNode(sel *Selector) bool {
	if _, unknown := v.Unreported(sel); unknown {
		return false
	}
	for i := range v.shapes {
		if v.shapes[i].usable(sel) {
			return true
		}
	}
	return false
}
