// Package addon holds fleetfit's agent as an Open Cluster Management add-on:
// the ClusterManagementAddOn fleetfit-agent, the AddOnTemplate that OCM's
// add-on manager deploys the agent from, and the hub admission policy that
// keeps each agent to its own cluster's namespace. The template is generated
// from deploy/agent and the managed cluster's CRDs by `make generate`
// (pkg/install/internal/gentemplate), so the add-on deploys what `fleetfit
// install agent` does. Like the rest of deploy/, it holds data only and
// imports nothing of fleetfit's code.
package addon

import _ "embed"

// Name names the add-on: its ClusterManagementAddOn, and the
// ManagedClusterAddOn that enables it in a cluster's namespace.
const Name = "fleetfit-agent"

// TemplateName names the AddOnTemplate the ClusterManagementAddOn points at.
const TemplateName = "fleetfit-agent"

// ImagePlaceholder stands for the image in the generated template's
// Deployment; the installer puts the chosen image in its place.
const ImagePlaceholder = "IMAGE"

// Variables OCM's add-on manager fills in when it renders the template for a
// cluster: the cluster's name, and the path of the hub kubeconfig it mounts
// into the agent's Deployment (from the Secret HubKubeconfigSecret, which
// OCM's registration agent writes and keeps current).
const (
	ClusterNameVariable   = "{{CLUSTER_NAME}}"
	HubKubeconfigVariable = "{{HUB_KUBECONFIG}}"
	HubKubeconfigSecret   = Name + "-hub-kubeconfig"
)

// ClusterManagementAddOn is the add-on's ClusterManagementAddOn.
//
//go:embed clustermanagementaddon.yaml
var ClusterManagementAddOn []byte

// HubAdmission is the ValidatingAdmissionPolicy, and its binding, that keep
// the agent of each cluster to that cluster's namespace on the hub.
//
//go:embed hub-admission.yaml
var HubAdmission []byte

// AddOnTemplate is the generated AddOnTemplate, with ImagePlaceholder for
// the image.
//
//go:embed addontemplate.yaml
var AddOnTemplate []byte
