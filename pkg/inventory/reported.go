package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Reported labels
//
// An agent reports a node label as a feature only when its key starts with
// one of the agent's prefixes or is one of the keys the hub asked for
// (ClusterInventory spec.labelKeys). A node label it does not report is
// invisible to the hub, so a requirement on that key can be decided neither
// way: "gpu In [a100]" is not failed by the label's absence, and
// "gpu NotIn [a100]" is not met by it. A View therefore treats a Selector
// that requires an unreported key as matching no node of the cluster, and
// says why (Unreported): the cluster is not feasible for a mandatory
// requirement, whatever its operator, and an optional one does not score.

// labelFilter selects the node labels reported as features: those whose key
// starts with one of prefixes or is one of keys.
type labelFilter struct {
	prefixes []string
	keys     map[string]struct{}
}

func newLabelFilter(prefixes, keys []string) labelFilter {
	f := labelFilter{prefixes: prefixes}
	if len(keys) > 0 {
		f.keys = make(map[string]struct{}, len(keys))
		for _, k := range keys {
			f.keys[k] = struct{}{}
		}
	}
	return f
}

func (f *labelFilter) selects(key string) bool {
	for _, p := range f.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	_, ok := f.keys[key]
	return ok
}

// reportedLabels is what a report says it selects, copied for the status.
func (c Config) reportedLabels() *v1alpha1.ReportedLabels {
	r := &v1alpha1.ReportedLabels{}
	if len(c.FeatureLabelPrefixes) > 0 {
		r.Prefixes = slices.Clone(c.FeatureLabelPrefixes)
	}
	if len(c.FeatureLabelKeys) > 0 {
		r.Keys = slices.Sorted(slices.Values(c.FeatureLabelKeys))
		r.Keys = slices.Compact(r.Keys)
	}
	return r
}

// LegacyReportedLabels is what the hub assumes an agent reports when its
// inventory does not say (status.reportedLabels is absent): such an agent
// predates the field, and agents have always reported the default prefixes
// unless told otherwise. Assuming less would make every requirement outside
// them unknown on clusters that have not upgraded, which is what they are;
// assuming more would let the absence of a label decide a requirement.
func LegacyReportedLabels() *v1alpha1.ReportedLabels {
	return &v1alpha1.ReportedLabels{Prefixes: slices.Clone(DefaultFeatureLabelPrefixes)}
}

// reportedOf returns the labels st reports, LegacyReportedLabels when it
// does not say, as a filter of its own.
func reportedOf(st *v1alpha1.ClusterInventoryStatus) labelFilter {
	r := st.ReportedLabels
	if r == nil {
		r = LegacyReportedLabels()
	}
	return newLabelFilter(slices.Clone(r.Prefixes), r.Keys)
}

// Unreported returns the first key, in the order of the requirements, that
// a feature requirement of sel uses and the cluster does not report, and
// false when the cluster reports every key sel uses. The View's fit queries
// take a Selector with such a key as matching no node.
func (v *View) Unreported(sel *Selector) (string, bool) {
	if sel == nil {
		return "", false
	}
	for i := range sel.features {
		if k := sel.features[i].key; !v.reported.selects(k) {
			return k, true
		}
	}
	return "", false
}

// unreportedText says why a Selector is unknown on the cluster.
func unreportedText(key string) string {
	return fmt.Sprintf("the cluster does not report label %s yet", key)
}
