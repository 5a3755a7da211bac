// Package delivery holds what the hub lets an HPAIntent deliver to managed clusters, and as
// whom. An intent's author may only have rights in the intent's namespace on the hub, while
// OCM's work agent applies ManifestWorks with its own, wide, rights on the managed cluster: an
// unchecked manifest list would make every intent author a cluster-admin of every cluster the
// placement selects. Two fences stand in the way:
//
//   - on the hub, a Policy: the kinds the hub's admin lets intents deliver, and the namespaces
//     they may deliver into (the intent's own, plus any the admin adds); cluster-scoped kinds
//     other than Namespace are never delivered. An intent that asks for more is not valid, and
//     nothing of it is delivered.
//   - on the managed cluster, the executor: every ManifestWork names the ServiceAccount
//     ExecutorServiceAccount of the intent's namespace, and OCM's work agent applies a manifest
//     only when that ServiceAccount may create, update, patch and get it there (it checks with
//     SubjectAccessReviews). The managed cluster's admin grants it what the namespace may have
//     (`fleetfit install agent --delivery-namespace`).
package delivery

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// ExecutorServiceAccount is the ServiceAccount, in the intent's namespace on each managed
// cluster, as which OCM's work agent applies an intent's manifests.
const ExecutorServiceAccount = "fleetfit-delivery"

// Executor is the executor of the ManifestWorks of intents of a namespace.
func Executor(namespace string) *workv1.ManifestWorkExecutor {
	return &workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{
		Type:           workv1.ExecutorSubjectTypeServiceAccount,
		ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: namespace, Name: ExecutorServiceAccount},
	}}
}

// DefaultKinds are the kinds intents may deliver unless the hub's admin says otherwise, as
// "group/Kind" ("Kind" for the core group): workloads and what they commonly need.
var DefaultKinds = []string{
	"apps/Deployment", "apps/StatefulSet", "apps/DaemonSet", "apps/ReplicaSet", "batch/Job", "batch/CronJob", "Pod",
	"Namespace", "Service", "ConfigMap", "Secret", "ServiceAccount", "PersistentVolumeClaim",
	"resource.k8s.io/ResourceClaimTemplate",
}

// clusterScoped are the cluster-scoped kinds of Kubernetes and of common add-ons: they act on
// the whole cluster, so no intent delivers them, whatever the allowed kinds say. Namespace is
// the one exception, limited to the namespaces an intent may deliver into.
var clusterScoped = sets.New(
	schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"},
	schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"},
	schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"},
	schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"},
	schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"},
	schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"},
	schema.GroupKind{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"},
	schema.GroupKind{Group: "apiregistration.k8s.io", Kind: "APIService"},
	schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PriorityClass"},
	schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"},
	schema.GroupKind{Group: "storage.k8s.io", Kind: "CSIDriver"},
	schema.GroupKind{Group: "node.k8s.io", Kind: "RuntimeClass"},
	schema.GroupKind{Group: "networking.k8s.io", Kind: "IngressClass"},
	schema.GroupKind{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"},
	schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"},
	schema.GroupKind{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"},
	schema.GroupKind{Kind: "PersistentVolume"},
	schema.GroupKind{Group: "resource.k8s.io", Kind: "DeviceClass"},
	schema.GroupKind{Group: "resource.k8s.io", Kind: "ResourceSlice"},
	schema.GroupKind{Group: "resource.k8s.io", Kind: "DeviceTaintRule"},
	schema.GroupKind{Kind: "Node"},
)

// Policy says what intents may deliver. The zero value delivers nothing; use NewPolicy.
type Policy struct {
	kinds      sets.Set[schema.GroupKind]
	namespaces sets.Set[string]
}

// NewPolicy returns the policy that delivers the kinds given as "group/Kind" ("Kind" for the
// core group; nil: DefaultKinds) into the intent's own namespace and the namespaces listed.
func NewPolicy(kinds, namespaces []string) (*Policy, error) {
	if kinds == nil {
		kinds = DefaultKinds
	}
	p := &Policy{kinds: sets.New[schema.GroupKind](), namespaces: sets.New(namespaces...)}
	for _, k := range kinds {
		gk := schema.GroupKind{Kind: k}
		if group, kind, ok := strings.Cut(k, "/"); ok {
			gk = schema.GroupKind{Group: group, Kind: kind}
		}
		if gk.Kind == "" || strings.Contains(gk.Kind, "/") || (strings.Contains(k, "/") && gk.Group == "") {
			return nil, fmt.Errorf("delivered kind %q: want group/Kind, or Kind for the core group (as apps/Deployment, Service)", k)
		}
		if clusterScoped.Has(gk) {
			return nil, fmt.Errorf("delivered kind %q is cluster-scoped: intents deliver only namespaced kinds and Namespace", k)
		}
		p.kinds.Insert(gk)
	}
	for _, ns := range namespaces {
		if ns == "" {
			return nil, fmt.Errorf("a delivery namespace is empty")
		}
	}
	return p, nil
}

// Default is the policy of DefaultKinds into the intent's own namespace.
func Default() *Policy { return defaultPolicy }

var defaultPolicy = func() *Policy {
	p, err := NewPolicy(nil, nil)
	if err != nil {
		panic(fmt.Sprintf("the default delivery policy: %v", err)) // a bug in DefaultKinds
	}
	return p
}()

// Kinds returns the allowed kinds as "group/Kind", sorted.
func (p *Policy) Kinds() []string {
	var out []string
	for gk := range p.kinds {
		out = append(out, formatKind(gk))
	}
	slices.Sort(out)
	return out
}

func formatKind(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Group + "/" + gk.Kind
}

// Check returns what keeps the intent's manifests from being delivered, one problem per
// refused manifest, each saying what to change; nil when all may be delivered. Manifests
// that do not decode are left to the intent's other validation.
func (p *Policy) Check(in *v1alpha1.HPAIntent) []string {
	if in.Spec.Workload == nil {
		return nil
	}
	var problems []string
	for i, m := range in.Spec.Workload.Manifests {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(m.Raw); err != nil {
			continue
		}
		if why := p.refuses(in.Namespace, obj); why != "" {
			problems = append(problems, fmt.Sprintf("spec.workload.manifests[%d] (%s %s): %s", i, obj.GetKind(), obj.GetName(), why))
		}
	}
	return problems
}

// refuses says why obj may not be delivered for an intent of namespace, or "".
func (p *Policy) refuses(namespace string, obj *unstructured.Unstructured) string {
	gk := obj.GroupVersionKind().GroupKind()
	allowedNamespaces := func() string {
		return strings.Join(append([]string{namespace}, sets.List(p.namespaces)...), ", ")
	}
	switch {
	case clusterScoped.Has(gk):
		return fmt.Sprintf("%s is cluster-scoped and never delivered: an intent's workload may only hold namespaced objects of its namespace (and that Namespace); ask the managed clusters' admins to install it", formatKind(gk))
	case !p.kinds.Has(gk):
		return fmt.Sprintf("the hub does not deliver %s (it delivers %s); remove it, or ask the hub's admin to add it to --delivery-allowed-kinds", formatKind(gk), strings.Join(p.Kinds(), ", "))
	case gk == schema.GroupKind{Kind: "Namespace"}:
		if obj.GetName() != namespace && !p.namespaces.Has(obj.GetName()) {
			return fmt.Sprintf("an intent of namespace %s may deliver only the Namespaces %s", namespace, allowedNamespaces())
		}
	case obj.GetNamespace() != "" && obj.GetNamespace() != namespace && !p.namespaces.Has(obj.GetNamespace()):
		return fmt.Sprintf("namespace %s: an intent of namespace %s delivers only into %s; leave metadata.namespace empty to deliver into %s",
			obj.GetNamespace(), namespace, allowedNamespaces(), namespace)
	}
	return ""
}
