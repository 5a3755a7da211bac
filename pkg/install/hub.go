package install

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	deployhub "github.com/fleetfit/fleetfit/deploy/hub"
	"github.com/fleetfit/fleetfit/pkg/placementmode"
	"github.com/fleetfit/fleetfit/pkg/version"
)

// ImageRepository is where fleetfit's image, built from the repository's
// Dockerfile, is published.
const ImageRepository = "ghcr.io/fleetfit/fleetfit"

// notInTag matches what an image tag may not hold ([A-Za-z0-9_.-], at most
// 128 characters, not starting with . or -).
var notInTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

// DefaultImage is the image of this build's version: ImageRepository tagged
// with the version, e.g. ghcr.io/fleetfit/fleetfit:v0.3.0.
func DefaultImage() string {
	tag := notInTag.ReplaceAllString(version.Get().GitVersion, "-")
	tag = strings.TrimLeft(tag, ".-")
	if len(tag) > 128 {
		tag = tag[:128]
	}
	if tag == "" {
		tag = "latest"
	}
	return ImageRepository + ":" + tag
}

// ValidateImage rejects what cannot be a container image reference.
func ValidateImage(image string) error {
	if image == "" {
		return fmt.Errorf("the image must not be empty")
	}
	if strings.ContainsFunc(image, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("image %q holds spaces or control characters", image)
	}
	return nil
}

// HubOptions choose what runs on the hub.
type HubOptions struct {
	// Image is fleetfit's image; the hub runs its entrypoint, fleetfit-hub.
	Image string
	// Placements is fleetfit-hub's --placements: which Placements it
	// schedules (placementmode.All or placementmode.Annotated).
	Placements placementmode.Mode
}

// Validate checks the options.
func (o HubOptions) Validate() error {
	if _, err := placementmode.ParseMode(string(o.Placements)); err != nil {
		return fmt.Errorf("placements %w", err)
	}
	return ValidateImage(o.Image)
}

// HubObjects are deploy/hub's objects — namespace, ServiceAccount, RBAC, the FlowSchema of
// fleetfit-hub's requests, the admission policy for OCM's objects, Deployment and Service — for the options, in the order to apply them. The
// hub's CRDs are not among them (see manifests.HubCRDs).
func HubObjects(o HubOptions) ([]*unstructured.Unstructured, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	objs, err := Decode(deployhub.RBAC, deployhub.FlowControl, deployhub.Admission, deployhub.Deployment(o.Image))
	if err != nil {
		return nil, err
	}
	for _, obj := range objs {
		if obj.GetKind() == "Deployment" && obj.GetName() == deployhub.DeploymentName {
			if err := setArg(obj, deployhub.DeploymentName, "--placements", string(o.Placements)); err != nil {
				return nil, err
			}
			return objs, nil
		}
	}
	return nil, fmt.Errorf("deploy/hub has no Deployment %s", deployhub.DeploymentName)
}

// setArg sets --flag=value in the args of a Deployment's container,
// replacing the flag's value when the manifest already has one.
func setArg(deployment *unstructured.Unstructured, container, flag, value string) error {
	containers, _, err := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return fmt.Errorf("reading the containers of Deployment %s: %w", deployment.GetName(), err)
	}
	for i, c := range containers {
		c, ok := c.(map[string]any)
		if !ok || c["name"] != container {
			continue
		}
		args, _, err := unstructured.NestedStringSlice(c, "args")
		if err != nil {
			return fmt.Errorf("reading the args of container %s: %w", container, err)
		}
		arg, replaced := flag+"="+value, false
		for j, a := range args {
			if a == flag || strings.HasPrefix(a, flag+"=") {
				args[j], replaced = arg, true
			}
		}
		if !replaced {
			args = append(args, arg)
		}
		if err := unstructured.SetNestedStringSlice(c, args, "args"); err != nil {
			return err
		}
		containers[i] = c
		return unstructured.SetNestedSlice(deployment.Object, containers, "spec", "template", "spec", "containers")
	}
	return fmt.Errorf("deployment %s has no container %s", deployment.GetName(), container)
}
