// Package addontemplate builds the AddOnTemplate of fleetfit's agent from the
// manifests that `fleetfit install agent` applies — deploy/agent's RBAC on
// the managed cluster, the pod resource injector and the Deployment, and
// fleetfit's CRDs of the managed cluster — so that a change to any of them
// reaches the add-on with the next `make generate`.
package addontemplate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/yaml"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// Sources are what the template is made of.
type Sources struct {
	// SpokeRBAC is the agent's namespace, ServiceAccount and RBAC on the
	// managed cluster.
	SpokeRBAC []byte
	// CRDs are fleetfit's CRDs that the agent serves on the managed cluster.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Injector is the pod resource injector's Service and webhook
	// configuration.
	Injector []byte
	// Deployment is the agent's Deployment for the image
	// deployaddon.ImagePlaceholder and the cluster
	// deployaddon.ClusterNameVariable, mounting its hub kubeconfig from the
	// Secret HubKubeconfigSecret.
	Deployment []byte
	// HubKubeconfigSecret is the Secret the Deployment mounts its hub
	// kubeconfig from when fleetfit installs it; OCM mounts its own instead.
	HubKubeconfigSecret string
	// HubRBAC holds the hub ClusterRoles the agent needs in its cluster's
	// namespace.
	HubRBAC []byte
}

// AgentSources are the agent's manifests as deploy/agent and manifests hold
// them.
func AgentSources() (Sources, error) {
	crds, err := manifests.SpokeCRDs()
	if err != nil {
		return Sources{}, err
	}
	var own []*apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds {
		// OCM's klusterlet installs OCM's own CRDs of the managed cluster.
		if crd.Spec.Group == v1alpha1.GroupName {
			own = append(own, crd)
		}
	}
	return Sources{
		SpokeRBAC:           deployagent.SpokeRBAC,
		CRDs:                own,
		Injector:            deployagent.Injector,
		Deployment:          deployagent.Deployment(deployaddon.ImagePlaceholder, deployaddon.ClusterNameVariable),
		HubKubeconfigSecret: deployagent.HubKubeconfigSecret,
		HubRBAC:             deployagent.HubRBAC,
	}, nil
}

// hubKubeconfigFlag is the agent's flag naming its hub kubeconfig.
const hubKubeconfigFlag = "--hub-kubeconfig"

// variables are the template variables the manifests may use; OCM's
// add-on manager replaces any other {{NAME}} with nothing.
var variables = []string{deployaddon.ClusterNameVariable, deployaddon.HubKubeconfigVariable}

// Build returns the AddOnTemplate deploying the agent of src: its objects in
// the order to apply them, with the Deployment reading the cluster's name
// and its hub kubeconfig from what OCM provides, and registration of type
// KubeClient granting every ClusterRole of src.HubRBAC in the cluster's
// namespace.
func Build(src Sources) (*addonv1alpha1.AddOnTemplate, error) {
	rbac, err := install.Decode(src.SpokeRBAC)
	if err != nil {
		return nil, fmt.Errorf("the agent's RBAC: %w", err)
	}
	crds, err := install.CRDObjects(src.CRDs)
	if err != nil {
		return nil, err
	}
	injector, err := install.Decode(src.Injector)
	if err != nil {
		return nil, fmt.Errorf("the injector: %w", err)
	}
	deployments, err := install.Decode(src.Deployment)
	if err != nil {
		return nil, fmt.Errorf("the agent's Deployment: %w", err)
	}
	for _, d := range deployments {
		if err := mountOCMsHubKubeconfig(d, src.HubKubeconfigSecret); err != nil {
			return nil, err
		}
	}
	permissions, err := hubPermissions(src.HubRBAC)
	if err != nil {
		return nil, err
	}

	objs := slices.Concat(rbac, crds, injector, deployments)
	work := make([]workv1.Manifest, 0, len(objs))
	for _, obj := range objs {
		raw, err := obj.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("encoding %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if err := checkVariables(string(raw)); err != nil {
			return nil, fmt.Errorf("%s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		work = append(work, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return &addonv1alpha1.AddOnTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: addonv1alpha1.GroupVersion.String(), Kind: "AddOnTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   deployaddon.TemplateName,
			Labels: map[string]string{"app.kubernetes.io/part-of": "fleetfit"},
		},
		Spec: addonv1alpha1.AddOnTemplateSpec{
			AddonName: deployaddon.Name,
			AgentSpec: workv1.ManifestWorkSpec{Workload: workv1.ManifestsTemplate{Manifests: work}},
			Registration: []addonv1alpha1.RegistrationSpec{{
				Type:       addonv1alpha1.RegistrationTypeKubeClient,
				KubeClient: &addonv1alpha1.KubeClientRegistrationConfig{HubPermissions: permissions},
			}},
		},
	}, nil
}

// header opens the generated file.
const header = `# Code generated by pkg/install/internal/gentemplate from deploy/agent and
# manifests/crds/spoke; DO NOT EDIT. Run make generate after changing them.
#
# The AddOnTemplate of the fleetfit-agent add-on: what OCM's add-on manager
# deploys on each managed cluster that enables it. ` + deployaddon.ImagePlaceholder + ` stands for fleetfit's
# image (fleetfit install addon --image sets it). OCM fills in the template
# variables and mounts the agent's hub kubeconfig, which its registration
# agent issues and rotates, from the Secret ` + deployaddon.HubKubeconfigSecret + `.
`

// Render writes t as the YAML file deploy/addon/addontemplate.yaml holds.
func Render(t *addonv1alpha1.AddOnTemplate) ([]byte, error) {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(t)
	if err != nil {
		return nil, fmt.Errorf("converting the AddOnTemplate: %w", err)
	}
	unstructured.RemoveNestedField(obj, "metadata", "creationTimestamp")
	raw, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the AddOnTemplate: %w", err)
	}
	return append([]byte(header), raw...), nil
}

// mountOCMsHubKubeconfig makes the Deployment read its hub kubeconfig from
// where OCM mounts it: the --hub-kubeconfig flag becomes the template
// variable, and the volume of fleetfit's own Secret goes, with its mounts
// (OCM adds a volume of that name, hub-kubeconfig, itself).
func mountOCMsHubKubeconfig(d *unstructured.Unstructured, secret string) error {
	if d.GetKind() != "Deployment" {
		return fmt.Errorf("the agent's Deployment manifest holds a %s", d.GetKind())
	}
	podSpec, _, err := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if err != nil || podSpec == nil {
		return fmt.Errorf("deployment %s has no pod template: %v", d.GetName(), err)
	}
	volumes, _ := podSpec["volumes"].([]any)
	removed := map[string]bool{}
	kept := volumes[:0:0]
	for _, v := range volumes {
		v, _ := v.(map[string]any)
		if name, found, _ := unstructured.NestedString(v, "secret", "secretName"); found && name == secret {
			removed[fmt.Sprint(v["name"])] = true
			continue
		}
		kept = append(kept, v)
	}
	if len(removed) == 0 {
		return fmt.Errorf("deployment %s mounts no Secret %s for its hub kubeconfig", d.GetName(), secret)
	}
	podSpec["volumes"] = kept
	if len(kept) == 0 {
		delete(podSpec, "volumes")
	}

	flags := 0
	for _, field := range []string{"initContainers", "containers"} {
		containers, _ := podSpec[field].([]any)
		for _, c := range containers {
			c, _ := c.(map[string]any)
			if c == nil {
				continue
			}
			mounts, _ := c["volumeMounts"].([]any)
			keptMounts := mounts[:0:0]
			for _, m := range mounts {
				if m, _ := m.(map[string]any); !removed[fmt.Sprint(m["name"])] {
					keptMounts = append(keptMounts, m)
				}
			}
			c["volumeMounts"] = keptMounts
			if len(keptMounts) == 0 {
				delete(c, "volumeMounts")
			}
			args, _ := c["args"].([]any)
			for i, a := range args {
				if s, _ := a.(string); s == hubKubeconfigFlag || strings.HasPrefix(s, hubKubeconfigFlag+"=") {
					args[i] = hubKubeconfigFlag + "=" + deployaddon.HubKubeconfigVariable
					flags++
				}
			}
		}
	}
	if flags != 1 {
		return fmt.Errorf("deployment %s: want one container with %s=PATH, found %d", d.GetName(), hubKubeconfigFlag, flags)
	}
	return unstructured.SetNestedMap(d.Object, podSpec, "spec", "template", "spec")
}

// hubPermissions are CurrentCluster bindings of every ClusterRole of
// hubRBAC: OCM's add-on manager binds each in the cluster's namespace to
// the agent's registered identity, and nothing else on the hub.
func hubPermissions(hubRBAC []byte) ([]addonv1alpha1.HubPermissionConfig, error) {
	objs, err := install.Decode(hubRBAC)
	if err != nil {
		return nil, fmt.Errorf("the agent's hub RBAC: %w", err)
	}
	var out []addonv1alpha1.HubPermissionConfig
	for _, obj := range objs {
		if obj.GetKind() != "ClusterRole" {
			return nil, fmt.Errorf("the agent's hub RBAC holds %s %s: an add-on's hubPermissions grant ClusterRoles only", obj.GetKind(), obj.GetName())
		}
		out = append(out, addonv1alpha1.HubPermissionConfig{
			Type:           addonv1alpha1.HubPermissionsBindingCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterBindingConfig{ClusterRoleName: obj.GetName()},
		})
	}
	if len(out) == 0 {
		return nil, errors.New("the agent's hub RBAC holds no ClusterRole")
	}
	return out, nil
}

// checkVariables refuses "{{" anywhere but in the known variables: OCM's
// add-on manager would replace an unknown {{NAME}} with nothing, and fail
// on an unclosed one, for every cluster.
func checkVariables(manifest string) error {
	rest := manifest
	for _, v := range variables {
		rest = strings.ReplaceAll(rest, v, "")
	}
	if i := strings.Index(rest, "{{"); i >= 0 {
		end := min(len(rest), i+40)
		return fmt.Errorf("%q is not a template variable OCM provides (only %s)", rest[i:end], strings.Join(variables, ", "))
	}
	return nil
}
