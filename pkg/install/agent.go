package install

import (
	"encoding/base64"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
)

// AgentOptions choose what runs in a managed cluster.
type AgentOptions struct {
	// ClusterName is the cluster's name on the hub: its ManagedCluster and
	// its namespace there.
	ClusterName string
	// Image is fleetfit's image; the agent runs its fleetfit-agent.
	Image string
	// HubKubeconfig is the agent's self-contained kubeconfig for the hub
	// (see LoadHubKubeconfig).
	HubKubeconfig []byte
	// DeliveryNamespaces are the namespaces whose HPAIntents may deliver
	// workloads into the same namespace here (see DeliveryObjects).
	DeliveryNamespaces []string
}

// ValidateClusterName checks that name can be a managed cluster's name: a
// DNS-1123 label, as OCM requires.
func ValidateClusterName(name string) error {
	if name == "" {
		return fmt.Errorf("the cluster name must not be empty")
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("%q is not a valid cluster name: %v", name, msgs)
	}
	return nil
}

// Validate checks the options.
func (o AgentOptions) Validate() error {
	if err := ValidateClusterName(o.ClusterName); err != nil {
		return err
	}
	if len(o.HubKubeconfig) == 0 {
		return fmt.Errorf("the agent needs a kubeconfig for the hub")
	}
	for _, ns := range o.DeliveryNamespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return fmt.Errorf("delivery namespace %q is not a valid namespace name: %v", ns, msgs)
		}
	}
	return ValidateImage(o.Image)
}

// DeliveryObjects let the HPAIntents of each namespace deliver their workloads
// into that namespace of the managed cluster, as deploy/agent's DeliveryRBAC
// says; the ClusterRole fleetfit:delivery comes once, first.
func DeliveryObjects(namespaces ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	seen := map[string]bool{}
	for _, ns := range namespaces {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return nil, fmt.Errorf("delivery namespace %q is not a valid namespace name: %v", ns, msgs)
		}
		objs, err := Decode(deployagent.DeliveryRBAC(ns))
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			key := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
			if !seen[key] {
				seen[key] = true
				out = append(out, o)
			}
		}
	}
	return out, nil
}

// AgentObjects are the managed cluster's objects — deploy/agent's namespace,
// ServiceAccount and RBAC, the Secret holding the hub kubeconfig, the pod
// resource injector's Service and MutatingWebhookConfiguration, and the
// Deployment — in the order to apply them. The managed cluster's CRDs are
// not among them (see manifests.SpokeCRDs).
func AgentObjects(o AgentOptions) ([]*unstructured.Unstructured, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	rbac, err := Decode(deployagent.SpokeRBAC)
	if err != nil {
		return nil, err
	}
	deployment, err := Decode(deployagent.Deployment(o.Image, o.ClusterName))
	if err != nil {
		return nil, err
	}
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata": map[string]any{
			"name":      deployagent.HubKubeconfigSecret,
			"namespace": deployagent.Namespace,
			"labels":    map[string]any{"app.kubernetes.io/name": "fleetfit-agent"},
		},
		"type": "Opaque",
		// data, not stringData: stringData is never stored, so applying
		// it again would never find it in place.
		"data": map[string]any{
			deployagent.HubKubeconfigSecretKey: base64.StdEncoding.EncodeToString(o.HubKubeconfig),
		},
	}}
	delivery, err := DeliveryObjects(o.DeliveryNamespaces...)
	if err != nil {
		return nil, err
	}
	injector, err := Decode(deployagent.Injector)
	if err != nil {
		return nil, err
	}
	objs := append(rbac, secret)
	objs = append(objs, delivery...)
	objs = append(objs, injector...)
	return append(objs, deployment...), nil
}

// AgentAccessObjects are the hub's objects that let the agent of cluster,
// authenticated as deploy/agent's AgentUser, report on the hub: the
// fleetfit:agent ClusterRole and its per-cluster bindings. The cluster's
// namespace must exist on the hub.
func AgentAccessObjects(cluster string) ([]*unstructured.Unstructured, error) {
	if err := ValidateClusterName(cluster); err != nil {
		return nil, err
	}
	return Decode(deployagent.HubRBAC, deployagent.HubClusterRBAC(cluster))
}
