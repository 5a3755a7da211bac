// Package hub holds the manifests that run fleetfit-hub on a hub cluster, for the installer
// and the tests to apply.
package hub

import (
	_ "embed"
	"strings"
)

// Namespace is where fleetfit-hub runs.
const Namespace = "fleetfit-system"

// DeploymentName names fleetfit-hub's Deployment, its container and its
// Service.
const DeploymentName = "fleetfit-hub"

// ServiceAccountUser is fleetfit-hub's identity on the hub.
const ServiceAccountUser = "system:serviceaccount:" + Namespace + ":fleetfit-hub"

// RBAC is the namespace, ServiceAccount and RBAC of fleetfit-hub.
//
//go:embed rbac.yaml
var RBAC []byte

// Admission is the ValidatingAdmissionPolicy, and its binding, that refuses
// numbers the hub's Go clients could not decode in the OCM objects they read.
//
//go:embed admission.yaml
var Admission []byte

// FlowControl is the FlowSchema that gives fleetfit-hub's requests to the hub API server
// the priority level of the hub's controllers: with no client-side rate limit by default,
// the API server's priority and fairness paces them.
//
//go:embed flowcontrol.yaml
var FlowControl []byte

//go:embed deployment.yaml
var deployment string

// Deployment returns the Deployment and Service running the given image.
func Deployment(image string) []byte {
	return []byte(strings.ReplaceAll(deployment, "IMAGE", image))
}
