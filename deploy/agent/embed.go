// Package agent holds the manifests of fleetfit-agent: its RBAC on the
// managed cluster and on the hub, and its Deployment, for the installer and
// the tests to apply.
package agent

import (
	_ "embed"
	"strings"
)

// Namespace is where fleetfit-agent runs in a managed cluster.
const Namespace = "fleetfit-agent"

// The Secret that holds the agent's kubeconfig for the hub, in Namespace,
// and where the Deployment mounts it.
const (
	HubKubeconfigSecret    = "fleetfit-hub-kubeconfig"
	HubKubeconfigSecretKey = "kubeconfig"
	HubKubeconfigPath      = "/var/run/fleetfit/hub/" + HubKubeconfigSecretKey
)

// SpokeRBAC is the namespace and ServiceAccount of the agent, and what the
// ServiceAccount may do in the managed cluster: read Nodes and Pods for its
// reports, and run machine groups (their controllers and the pod resource
// injector, whose certificates it keeps in Namespace).
//
//go:embed spoke-rbac.yaml
var SpokeRBAC []byte

// HubRBAC is the hub ClusterRole fleetfit:agent, bound per cluster by
// HubClusterRBAC.
//
//go:embed hub-rbac.yaml
var HubRBAC []byte

// The pod resource injector's Service, in Namespace, and its
// MutatingWebhookConfiguration, as Injector defines them.
const (
	InjectorService              = "fleetfit-agent-injector"
	InjectorWebhookConfiguration = "fleetfit-agent-injector"
)

// Injector is the Service in front of the agent's webhook port and the
// MutatingWebhookConfiguration that sends it guest pods of machine groups
// in opted-in namespaces. The agent fills in the configuration's caBundle.
//
//go:embed injector.yaml
var Injector []byte

//go:embed hub-cluster-rbac.yaml
var hubClusterRBAC string

//go:embed deployment.yaml
var deployment string

// AgentUser is the hub identity of the agent of cluster.
func AgentUser(cluster string) string { return "system:fleetfit:agent:" + cluster }

// HubClusterRBAC binds HubRBAC for one cluster's agent in that cluster's
// namespace: a RoleBinding, and nothing cluster-scoped.
func HubClusterRBAC(cluster string) []byte {
	return []byte(strings.ReplaceAll(hubClusterRBAC, "CLUSTER_NAME", cluster))
}

// Deployment returns the Deployment running fleetfit-agent for cluster from
// image. It mounts the Secret HubKubeconfigSecret, which must hold the
// agent's hub kubeconfig under HubKubeconfigSecretKey.
func Deployment(image, cluster string) []byte {
	return []byte(strings.NewReplacer("IMAGE", image, "CLUSTER_NAME", cluster).Replace(deployment))
}

//go:embed delivery-rbac.yaml
var deliveryRBAC string

// DeliveryRBAC lets HPAIntents of namespace deliver their workloads into that
// namespace of a managed cluster: the namespace, opted in to the pod resource
// injector for workloads that take machine types, the ServiceAccount
// fleetfit-delivery that OCM's work agent applies them as, and its RBAC (the
// ClusterRole fleetfit:delivery bound in the namespace, and the namespace
// object itself).
func DeliveryRBAC(namespace string) []byte {
	return []byte(strings.ReplaceAll(deliveryRBAC, "NAMESPACE", namespace))
}
