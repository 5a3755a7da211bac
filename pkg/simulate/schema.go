package simulate

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"

	"github.com/fleetfit/fleetfit/manifests"
)

// crdSchema is what the hub's API server holds for one version of one of its CRDs, compiled
// once: the structural schema (defaults, list types, embedded objects), the OpenAPI validator
// and the CEL rules.
type crdSchema struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
	namespaced bool
}

// crdSchemas are the hub's CRDs (OCM's and fleetfit's, as embedded in package manifests) and
// the managed clusters' (MachineGroups), so that objects read from a file are defaulted and
// validated as the API server that holds them would on create: a fleet file holds what a
// user writes, and the scheduler and the agent's code read what the server stores. Compiling the CEL rules takes a moment, so it is done once, when first needed.
type crdSchemas struct {
	once    sync.Once
	err     error
	schemas map[schema.GroupVersionKind]*crdSchema
}

var crds crdSchemas

func (d *crdSchemas) load() error {
	d.once.Do(func() {
		hub, err := manifests.HubCRDs()
		if err != nil {
			d.err = err
			return
		}
		spoke, err := manifests.SpokeCRDs()
		if err != nil {
			d.err = err
			return
		}
		d.schemas = map[schema.GroupVersionKind]*crdSchema{}
		for _, external := range append(hub, spoke...) {
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
				validator, _, err := apiservervalidation.NewSchemaValidator(validation.OpenAPIV3Schema)
				if err != nil {
					d.err = fmt.Errorf("CRD %s version %s: %w", crd.Name, v.Name, err)
					return
				}
				d.schemas[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = &crdSchema{
					structural: s,
					validator:  validator,
					cel:        cel.NewValidator(s, true, celconfig.PerCallLimit),
					namespaced: crd.Spec.Scope == apiextensions.NamespaceScoped,
				}
			}
		}
	})
	return d.err
}

// lookup returns the schema of a kind of the hub's or the clusters' CRDs, or nil for other kinds.
func (d *crdSchemas) lookup(gvk schema.GroupVersionKind) (*crdSchema, error) {
	if err := d.load(); err != nil {
		return nil, err
	}
	return d.schemas[gvk], nil
}

// defaultAndValidate drops the nulls the schema does not allow, defaults u in place and checks it as the API server checks a custom
// resource on create: its metadata (names, labels, annotations), its schema (types, formats
// such as int32, minimums and maximums, patterns, enums), embedded objects, list types, and
// the CEL rules within the API server's cost budget.
func (s *crdSchema) defaultAndValidate(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	// A null where the schema allows none is dropped, as the API server drops it (what
	// encoding a Go object with a nil slice writes).
	defaulting.PruneNonNullableNullsWithoutDefaults(u.Object, s.structural)
	defaulting.Default(u.Object, s.structural)
	errs := metavalidation.ValidateObjectMetaAccessor(u, s.namespaced, metavalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.Object, s.validator)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, u.Object, s.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, s.structural, u.Object)...)
	if len(errs) > 0 {
		// The CEL rules assume a well-typed object, as the API server's do.
		return errs
	}
	celErrs, _ := s.cel.Validate(ctx, nil, s.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
	return celErrs
}
