package simulate

import (
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetfit/fleetfit/manifests"
)

// crdDefaults applies the defaults of the hub's CRDs (OCM's and fleetfit's, as embedded in
// package manifests) to objects read from a file, as the API server would on create: a fleet
// file holds what a user writes, and the scheduler reads what the server stores.
type crdDefaults struct {
	once    sync.Once
	err     error
	schemas map[schema.GroupVersionKind]*structuralschema.Structural
}

var hubDefaults crdDefaults

func (d *crdDefaults) load() error {
	d.once.Do(func() {
		crds, err := manifests.HubCRDs()
		if err != nil {
			d.err = err
			return
		}
		d.schemas = map[schema.GroupVersionKind]*structuralschema.Structural{}
		for _, external := range crds {
			external = external.DeepCopy()
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(external)
			crd := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(external, crd, nil); err != nil {
				d.err = fmt.Errorf("converting CRD %s: %w", external.Name, err)
				return
			}
			for _, v := range crd.Spec.Versions {
				validation := v.Schema
				if validation == nil {
					validation = crd.Spec.Validation
				}
				if validation == nil || validation.OpenAPIV3Schema == nil {
					continue
				}
				s, err := structuralschema.NewStructural(validation.OpenAPIV3Schema)
				if err != nil {
					d.err = fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
					return
				}
				d.schemas[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = s
			}
		}
	})
	return d.err
}

// apply defaults obj in place when its kind is one of the hub's CRDs.
func (d *crdDefaults) apply(gvk schema.GroupVersionKind, obj map[string]any) error {
	if err := d.load(); err != nil {
		return err
	}
	if s, ok := d.schemas[gvk]; ok {
		defaulting.Default(obj, s)
	}
	return nil
}
