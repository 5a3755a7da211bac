package v1alpha1

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
