package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels that tie what fleetfit delivers to the HPAIntent it was delivered for. The hub puts
// them on an intent's ManifestWorks and on the pod templates of the workloads they carry, so
// the pods that run on a managed cluster carry them too; the agent there finds an intent's
// pods by them (see ClusterInventoryStatus.Unschedulable). Both keys and values are the same
// on the hub and on the managed clusters, so what an agent reports names the intent as the
// hub's ManifestWorks do.
const (
	// LabelIntentNamespace holds the namespace of the HPAIntent on the hub, which is always a
	// valid label value (a namespace name has at most 63 characters).
	LabelIntentNamespace = "fleetfit.io/hpaintent-namespace"
	// LabelIntentName holds the HPAIntent's name. A name is a DNS subdomain of up to 253
	// characters and a label value holds at most 63, so a longer name is cut and ends in "_"
	// and a hash of the whole name; an underscore never occurs in an object's name, so a cut
	// value is never mistaken for a name that fits. Compare it with the value the hub computes
	// for the intent, not with the intent's name.
	LabelIntentName = "fleetfit.io/hpaintent-name"
)

// intentNameHashLength is how many hex digits of the name's SHA-256 a cut LabelIntentName
// value ends with: 64 bits.
const intentNameHashLength = 16

// IntentLabelValue is the value of LabelIntentName for the HPAIntent named name: the name
// itself, or, when it is longer than a label value may be, its beginning, "_" and a hash of
// the whole name. The hub labels ManifestWorks and pod templates with it, and matches what an
// agent reports against it; it is computed here alone so that both sides always agree.
func IntentLabelValue(name string) string {
	if len(validation.IsValidLabelValue(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	keep := min(len(name), validation.LabelValueMaxLength-1-intentNameHashLength)
	return name[:keep] + "_" + hex.EncodeToString(sum[:])[:intentNameHashLength]
}
