package action

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	workv1 "open-cluster-management.io/api/work/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// How a ManifestWork names its intent.
//
// An HPAIntent's name is a DNS subdomain of up to 253 characters, and the API server admits
// every one of them. A label value holds at most 63 characters and an object name 253, so
// "<namespace>.<name>" and the name as a label value do not always fit. Refusing the longer
// names at admission would refuse names Kubernetes gives its users, which clients such as
// EMCO's API pass through from theirs, and leave those already stored Valid and undeliverable.
// Delivery does not depend on the name fitting instead: a name or label value that would be
// too long is cut and ends in a hash of the whole, as Kubernetes does for the names it
// generates. Every intent the API server admits can thus be delivered, and the names of those
// that already fit do not change.
//
// The cut forms cannot be mistaken for a name that fits: a cut ManifestWork name has no dot,
// which "<namespace>.<name>" always has, and a cut label value has an underscore, which no
// object name has. The full name of an intent whose label is cut is in the annotation
// AnnotationIntentName; IntentOf reads it back.
const (
	// AnnotationIntentName holds the intent's name on a ManifestWork whose LabelIntentName
	// holds a cut name (names longer than a label value may be).
	AnnotationIntentName = fleetfitv1alpha1.LabelIntentName
	// hashLength is how many hex digits of a name's SHA-256 a cut ManifestWork name ends
	// with: 64 bits. (fleetfitv1alpha1.IntentLabelValue cuts a label value alike.)
	hashLength = 16
)

// WorkName is the name of an intent's ManifestWork in every cluster namespace:
// "<namespace>.<name>", unique because a namespace name has no dots. When that is longer than
// an object name may be, it is "<namespace>-<name with dots as dashes, cut>-<hash>", which has
// no dot and so is never the WorkName of another intent.
func WorkName(in *fleetfitv1alpha1.HPAIntent) string {
	full := in.Namespace + "." + in.Name
	if len(full) <= validation.DNS1123SubdomainMaxLength {
		return full
	}
	prefix := in.Namespace + "-" + strings.ReplaceAll(in.Name, ".", "-")
	return prefix[:validation.DNS1123SubdomainMaxLength-1-hashLength] + "-" + nameHash(in.Namespace+"/"+in.Name)
}

// nameHash is the first hashLength hex digits of the SHA-256 of s.
func nameHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:hashLength]
}

// intentLabels are the labels that name the intent, on its ManifestWorks and on the pod
// templates of the workloads they deliver (so that the managed cluster's agent can report the
// intent's pods): fleetfitv1alpha1.LabelIntentNamespace and LabelIntentName.
func intentLabels(in *fleetfitv1alpha1.HPAIntent) map[string]string {
	return map[string]string{
		fleetfitv1alpha1.LabelIntentNamespace: in.Namespace,
		fleetfitv1alpha1.LabelIntentName:      fleetfitv1alpha1.IntentLabelValue(in.Name),
	}
}

// WorkMeta is the name, namespace, labels and annotations of the intent's ManifestWork on a
// cluster (without the annotations of what it delivers).
func WorkMeta(in *fleetfitv1alpha1.HPAIntent, cluster string) metav1.ObjectMeta {
	m := metav1.ObjectMeta{
		Name: WorkName(in), Namespace: cluster,
		Labels:      intentLabels(in),
		Annotations: map[string]string{},
	}
	if m.Labels[fleetfitv1alpha1.LabelIntentName] != in.Name {
		m.Annotations[AnnotationIntentName] = in.Name
	}
	return m
}

// WorkSelector selects the ManifestWorks of the intent namespace/name, and, should two names
// cut to one label value, those of the other intent too: callers keep the works IntentOf says
// are the intent's.
func WorkSelector(namespace, name string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{fleetfitv1alpha1.LabelIntentNamespace: namespace, fleetfitv1alpha1.LabelIntentName: fleetfitv1alpha1.IntentLabelValue(name)})
}

// IntentOf returns the namespace and name of the intent a ManifestWork delivers; ok is false
// for a ManifestWork fleetfit did not write, or whose labels and annotation disagree.
func IntentOf(w *workv1.ManifestWork) (namespace, name string, ok bool) {
	namespace, name = w.Labels[fleetfitv1alpha1.LabelIntentNamespace], w.Labels[fleetfitv1alpha1.LabelIntentName]
	if full, cut := w.Annotations[AnnotationIntentName]; cut {
		if fleetfitv1alpha1.IntentLabelValue(full) != name {
			return "", "", false
		}
		name = full
	}
	// A cut label without its annotation names no intent: it is no object name.
	if namespace == "" || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return "", "", false
	}
	return namespace, name, true
}

// How delivery names the Dynamic Resource Allocation objects of a consumer's device
// requirements (see devices.go).
//
// Each consumer with device requirements gets one ResourceClaimTemplate in its workload's
// namespace, named ClaimTemplateName: "<WorkName>.<consumer>", e.g. "shop.web.train", with
// the consumer as a DNS label (dnsLabel). Since a namespace and a DNS label have no dots, the
// first segment is the intent's namespace, the last the consumer and the rest the intent's
// name: two consumers never share a name, whichever intents and namespaces they come from.
// A name longer than an object name may be is cut, with dots as dashes, and ends in a hash of
// the intent's namespace, name and consumer; having no dot, it is never a name that fits.
//
// The pod claims the template under the claim name PodClaimName, the consumer as a DNS label,
// and the container gets the whole claim. Each device requirement is one request of the
// template, named requestName: the requirement's name as a DNS label, which Kubernetes
// requires of a request's name.
//
// A consumer's and a requirement's names are up to 63 characters with no other rule, so they
// need not be DNS labels: dnsLabel keeps one that is, and derives one from any other,
// deterministically — lower case, each character other than a-z, 0-9 and "-" as "-", no
// leading or trailing "-", cut to 46 characters, then "-" and 16 hex digits of the SHA-256 of
// the name as written ("GPU A100" is "gpu-a100-" and the hash). The hash keeps the names of
// one consumer's requirements, or one intent's consumers, apart, since theirs are.

// ClaimTemplateName is the name of the ResourceClaimTemplate of consumer's device
// requirements, in the namespace of the consumer's workload.
func ClaimTemplateName(in *fleetfitv1alpha1.HPAIntent, consumer string) string {
	full := WorkName(in) + "." + dnsLabel(consumer)
	if len(full) <= validation.DNS1123SubdomainMaxLength {
		return full
	}
	prefix := strings.ReplaceAll(full, ".", "-")
	return prefix[:validation.DNS1123SubdomainMaxLength-1-hashLength] + "-" + nameHash(in.Namespace+"/"+in.Name+"/"+consumer)
}

// PodClaimName is the name under which the consumer's pods claim its ResourceClaimTemplate.
func PodClaimName(consumer string) string { return dnsLabel(consumer) }

// requestName is the name of the request of a device requirement in its consumer's
// ResourceClaimTemplate.
func requestName(requirement string) string { return dnsLabel(requirement) }

// dnsLabel returns name when it is a DNS label (RFC 1123), else a DNS label derived from it
// deterministically: its characters lower-cased, those not allowed in a label as "-", cut,
// and a hash of the whole name.
func dnsLabel(name string) string {
	if len(validation.IsDNS1123Label(name)) == 0 {
		return name
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	base := strings.Trim(b.String(), "-")
	if keep := validation.DNS1123LabelMaxLength - 1 - hashLength; len(base) > keep {
		base = strings.TrimRight(base[:keep], "-")
	}
	if base == "" {
		return nameHash(name)
	}
	return base + "-" + nameHash(name)
}
