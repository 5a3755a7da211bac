package inventory

// HasNode reports whether some schedulable node passes sel — has its features and tolerates
// its taints — whatever is free on it.
func (v *View) HasNode(sel *Selector) bool {
	for i := range v.shapes {
		if v.shapes[i].usable(sel) {
			return true
		}
	}
	return false
}
