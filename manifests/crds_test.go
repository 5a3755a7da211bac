package manifests

import (
	"slices"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
)

// TestAPIServerAcceptsCRDs validates every CRD as the API server does when it is created,
// including the estimated cost of its CEL rules, so that a rule too costly for the API server
// is found by a unit test and not when a fleet is started.
func TestAPIServerAcceptsCRDs(t *testing.T) {
	for _, side := range []struct {
		name string
		load func() ([]*apiextensionsv1.CustomResourceDefinition, error)
	}{{"hub", HubCRDs}, {"spoke", SpokeCRDs}, {"sig-multicluster", SIGMulticlusterCRDs}} {
		crds, err := side.load()
		if err != nil {
			t.Fatalf("Loading the %s CRDs: %v", side.name, err)
		}
		if len(crds) == 0 {
			t.Fatalf("No %s CRDs", side.name)
		}
		for _, crd := range crds {
			t.Run(crd.Name, func(t *testing.T) {
				// As the API server prepares a new CRD: defaults, then the stored version.
				crd = crd.DeepCopy()
				apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
				internal := &apiextensions.CustomResourceDefinition{}
				if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
					t.Fatalf("Converting: %v", err)
				}
				for _, v := range internal.Spec.Versions {
					if v.Storage {
						internal.Status.StoredVersions = []string{v.Name}
					}
				}
				if errs := validation.ValidateCustomResourceDefinition(t.Context(), internal); len(errs) > 0 {
					t.Errorf("The API server would refuse %s: %v", crd.Name, errs.ToAggregate())
				}
			})
		}
	}
}

// TestSIGMulticlusterCRDsAreOptional: the SIG-Multicluster APIs are apart from the hub's CRDs,
// which every install applies, and hold exactly ClusterProfile and PlacementDecision.
func TestSIGMulticlusterCRDsAreOptional(t *testing.T) {
	hub, err := HubCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range hub {
		if crd.Spec.Group == "multicluster.x-k8s.io" {
			t.Errorf("the hub's CRDs include %s, which only install crds --side sig-multicluster applies", crd.Name)
		}
	}
	sig, err := SIGMulticlusterCRDs()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, crd := range sig {
		names = append(names, crd.Name)
	}
	if want := []string{"clusterprofiles.multicluster.x-k8s.io", "placementdecisions.multicluster.x-k8s.io"}; !slices.Equal(names, want) {
		t.Errorf("SIG-Multicluster CRDs %v, want %v", names, want)
	}
}
