package addon_test

import (
	"testing"

	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/yaml"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
)

// TestClusterManagementAddOnPointsAtTheTemplate checks what OCM's add-on
// manager needs to render the add-on from the template.
func TestClusterManagementAddOnPointsAtTheTemplate(t *testing.T) {
	var cma addonv1alpha1.ClusterManagementAddOn
	if err := yaml.UnmarshalStrict(deployaddon.ClusterManagementAddOn, &cma); err != nil {
		t.Fatal(err)
	}
	if cma.Name != deployaddon.Name {
		t.Errorf("name = %q, want %q", cma.Name, deployaddon.Name)
	}
	found := false
	for _, c := range cma.Spec.SupportedConfigs {
		if c.Group == addonv1alpha1.GroupName && c.Resource == "addontemplates" {
			found = c.DefaultConfig != nil && c.DefaultConfig.Name == deployaddon.TemplateName && c.DefaultConfig.Namespace == ""
		}
	}
	if !found {
		t.Errorf("supportedConfigs %+v do not default to the AddOnTemplate %s", cma.Spec.SupportedConfigs, deployaddon.TemplateName)
	}
	if cma.Spec.InstallStrategy.Type != addonv1alpha1.AddonInstallStrategyManual {
		t.Errorf("install strategy = %q, want Manual", cma.Spec.InstallStrategy.Type)
	}
	if got := cma.Annotations[addonv1alpha1.AddonLifecycleAnnotationKey]; got != addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue {
		t.Errorf("lifecycle annotation = %q, want %q", got, addonv1alpha1.AddonLifecycleAddonManagerAnnotationValue)
	}
}
