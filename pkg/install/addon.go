package install

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
)

// AddOnOptions choose how the fleetfit-agent add-on deploys the agent.
type AddOnOptions struct {
	// Image is fleetfit's image; the agent runs its fleetfit-agent.
	Image string
}

// AddOnObjects are the hub's objects of the fleetfit-agent add-on, in the
// order to apply them: the ClusterRole fleetfit:agent, which OCM's add-on
// manager binds in each enabled cluster's namespace; the admission policy
// that keeps each agent to that namespace; the AddOnTemplate with the image
// of o; and the ClusterManagementAddOn, last, so that the add-on manager
// finds everything it points at.
func AddOnObjects(o AddOnOptions) ([]*unstructured.Unstructured, error) {
	if err := ValidateImage(o.Image); err != nil {
		return nil, err
	}
	objs, err := Decode(deployagent.HubRBAC, deployaddon.HubAdmission, deployaddon.AddOnTemplate, deployaddon.ClusterManagementAddOn)
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if obj.GetKind() == "AddOnTemplate" && obj.GetName() == deployaddon.TemplateName {
			if err := setTemplateImage(obj, o.Image); err != nil {
				return nil, err
			}
			return objs, nil
		}
	}
	return nil, fmt.Errorf("deploy/addon has no AddOnTemplate %s", deployaddon.TemplateName)
}

// setTemplateImage puts image in the place of the placeholder in the
// containers of the template's Deployments; nothing else of the template
// changes, whatever text it holds.
func setTemplateImage(template *unstructured.Unstructured, image string) error {
	manifests, _, err := unstructured.NestedSlice(template.Object, "spec", "agentSpec", "workload", "manifests")
	if err != nil {
		return fmt.Errorf("reading the manifests of AddOnTemplate %s: %w", template.GetName(), err)
	}
	set := 0
	for i, m := range manifests {
		m, ok := m.(map[string]any)
		if !ok || m["kind"] != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(m, "spec", "template", "spec", "containers")
		if err != nil {
			return fmt.Errorf("reading the containers of the template's Deployment: %w", err)
		}
		for j, c := range containers {
			if c, ok := c.(map[string]any); ok && c["image"] == deployaddon.ImagePlaceholder {
				c["image"] = image
				containers[j] = c
				set++
			}
		}
		if err := unstructured.SetNestedSlice(m, containers, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
		manifests[i] = m
	}
	if set == 0 {
		return fmt.Errorf("AddOnTemplate %s has no container with the image %s to set", template.GetName(), deployaddon.ImagePlaceholder)
	}
	return unstructured.SetNestedSlice(template.Object, manifests, "spec", "agentSpec", "workload", "manifests")
}
