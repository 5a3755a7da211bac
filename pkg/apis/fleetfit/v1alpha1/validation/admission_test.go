package validation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const (
	hpaIntentCRDName = "hpaintents.fleetfit.io"
	// notCheckedDetail is the error the API server adds when schema errors
	// stop it from evaluating the CEL rules; it names no rule of ours.
	notCheckedDetail = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"
)

// admission checks an HPAIntent as the API server does when one is created,
// with the generated CRD that `make generate` embeds in package manifests:
// the request body is pruned of unknown fields and non-nullable nulls, then
// defaulted, then checked against the OpenAPI schema and the list-type
// invariants and, when nothing blocking was found, against the CEL rules.
// Only the object metadata checks are left out: this package does not
// validate metadata.
type admission struct {
	structural *structuralschema.Structural
	schema     apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

// newAdmission loads the HPAIntent CRD and prepares its validators the way
// the API server's CRD handler does for a served version.
func newAdmission(t *testing.T) *admission {
	t.Helper()
	crds, err := manifests.HubCRDs()
	if err != nil {
		t.Fatalf("Loading hub CRDs: %v", err)
	}
	var external *apiextensionsv1.CustomResourceDefinition
	for _, crd := range crds {
		if crd.Name == hpaIntentCRDName {
			external = crd.DeepCopy()
		}
	}
	if external == nil {
		t.Fatalf("No CRD %s among the hub CRDs", hpaIntentCRDName)
	}
	// The API server defaults a CRD and converts it to the internal version
	// before it serves it.
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(external)
	crd := &apiextensions.CustomResourceDefinition{}
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(external, crd, nil); err != nil {
		t.Fatalf("Converting %s to the internal version: %v", hpaIntentCRDName, err)
	}
	var served *apiextensions.CustomResourceValidation
	for _, v := range crd.Spec.Versions {
		if v.Name == v1alpha1.SchemeGroupVersion.Version {
			served = v.Schema
		}
	}
	if served == nil {
		// The conversion hoists a schema shared by every version to spec.
		served = crd.Spec.Validation
	}
	if served == nil || served.OpenAPIV3Schema == nil {
		t.Fatalf("%s has no schema for %s", hpaIntentCRDName, v1alpha1.SchemeGroupVersion.Version)
	}

	structural, err := structuralschema.NewStructural(served.OpenAPIV3Schema)
	if err != nil {
		t.Fatalf("Building the structural schema of %s: %v", hpaIntentCRDName, err)
	}
	schemaValidator, _, err := apiservervalidation.NewSchemaValidator(served.OpenAPIV3Schema)
	if err != nil {
		t.Fatalf("Building the schema validator of %s: %v", hpaIntentCRDName, err)
	}
	// Compile errors do not surface here: the validator reports them on every
	// object, so every valid case would fail.
	celValidator := cel.NewValidator(structural, true, celconfig.PerCallLimit)
	if celValidator == nil {
		t.Fatalf("%s has no x-kubernetes-validations rules to check", hpaIntentCRDName)
	}
	return &admission{
		structural: structural,
		schema:     schemaValidator,
		cel:        celValidator,
	}
}

// create returns the errors the API server would answer a create of obj, a
// decoded JSON request body, with. obj is modified.
func (a *admission) create(ctx context.Context, obj map[string]any) field.ErrorList {
	pruning.Prune(obj, a.structural, true)
	defaulting.PruneNonNullableNullsWithoutDefaults(obj, a.structural)
	defaulting.Default(obj, a.structural)

	errs := apiservervalidation.ValidateCustomResource(nil, obj, a.schema)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, a.structural, obj)...)
	for _, err := range errs {
		if blocksCEL(err.Type) {
			return append(errs, field.Invalid(nil, nil, notCheckedDetail))
		}
	}
	celErrs, _ := a.cel.Validate(ctx, nil, a.structural, obj, nil, celconfig.RuntimeCELCostBudget)
	return append(errs, celErrs...)
}

// blocksCEL is the API server's list of schema error types after which it
// does not evaluate CEL rules, since they could not rely on the schema.
func blocksCEL(t field.ErrorType) bool {
	switch t {
	case field.ErrorTypeNotSupported, field.ErrorTypeRequired, field.ErrorTypeTooLong, field.ErrorTypeTooMany, field.ErrorTypeTypeInvalid:
		return true
	}
	return false
}

// requestBody encodes intent as a Go client sends it, and decodes it as the
// API server does (integers stay integers).
func requestBody(t *testing.T, intent *v1alpha1.HPAIntent) map[string]any {
	t.Helper()
	raw, err := json.Marshal(intent)
	if err != nil {
		t.Fatalf("Encoding the intent: %v", err)
	}
	return decodeBody(t, raw)
}

func decodeBody(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	obj := map[string]any{}
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		t.Fatalf("Decoding %s: %v", raw, err)
	}
	return obj
}

// TestAdmissionAgrees runs every validation case through the CRD as the API
// server would and checks that admission and ValidateHPAIntent find the same
// problems with the same messages: each Go error is matched by an admission
// error, and each admission error by a Go error, except where a case says the
// CRD cannot see the problem (goOnly).
func TestAdmissionAgrees(t *testing.T) {
	a := newAdmission(t)
	for name, tc := range validationCases() {
		t.Run(name, func(t *testing.T) {
			goErrs := ValidateHPAIntent(tc.intent)
			admitted := a.create(t.Context(), requestBody(t, tc.intent))
			if tc.goOnly {
				if len(goErrs) == 0 {
					t.Fatalf("A goOnly case must have Go errors")
				}
				if len(admitted) > 0 {
					t.Errorf("Admission found errors in an intent whose only problems are beyond the CRD:\n%s", formatErrors(admitted))
				}
				return
			}
			for _, goErr := range goErrs {
				if !slices.ContainsFunc(admitted, func(e *field.Error) bool { return sameProblem(e, goErr) }) {
					t.Errorf("Go reports %q; admission does not. Admission said:\n%s", goErr.Error(), formatErrors(admitted))
				}
			}
			for _, e := range admitted {
				if e.Detail == notCheckedDetail ||
					slices.ContainsFunc(goErrs, func(goErr *field.Error) bool { return sameProblem(e, goErr) }) {
					continue
				}
				t.Errorf("Admission reports %q; Go does not. Go said:\n%s", e.Error(), formatErrors(goErrs))
			}
		})
	}
}

// sameProblem reports whether admitted, an admission error, reports goErr's
// problem: at goErr's field or one of its parents (a CEL rule reports on the
// object that carries it, where Go may point at the field to fix), and with
// goErr's detail in its message, or, for errors without a detail (Required,
// Duplicate), with the same type.
func sameProblem(admitted, goErr *field.Error) bool {
	if admitted.Field != goErr.Field &&
		!strings.HasPrefix(goErr.Field, admitted.Field+".") &&
		!strings.HasPrefix(goErr.Field, admitted.Field+"[") {
		return false
	}
	if goErr.Detail == "" {
		return admitted.Type == goErr.Type
	}
	return strings.Contains(admitted.Error(), goErr.Detail)
}

// fwallYAML is the fwall example as a person writes it, with EMCO's legacy
// units spelt as plain integers.
const fwallYAML = `
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata:
  name: fwall
  namespace: ns
spec:
  placementRef:
    name: fwall
  consumers:
  - name: core-fwall
    target: {apiVersion: apps/v1, kind: StatefulSet, name: core-fwall, container: palo-alto-e3000}
    exclusiveCPU: true
    requirements:
    - name: cpu
      resource: {name: cpu, requests: 4, limits: 4}
    - name: memory
      resource: {name: memory, requests: 1000, limits: 1000, units: MB}
    - name: gpu
      mandatory: false
      weight: 9
      resource: {name: nvidia.com/gpu, limits: 1}
  - name: api-server
    target: {apiVersion: apps/v1, kind: Deployment, name: api-server, container: nginx}
    requirements:
    - name: cpu
      resource: {name: cpu, requests: 1, limits: 2}
    - name: memory
      resource: {name: memory, requests: 200, units: MB}
`

// TestFwallAsWritten checks that the fwall example written in YAML is the
// builders' example, and that both Go and the CRD accept it: sent as
// written, core-fwall's memory reaches the CRD as the integer 1000.
func TestFwallAsWritten(t *testing.T) {
	intent := &v1alpha1.HPAIntent{}
	if err := yaml.UnmarshalStrict([]byte(fwallYAML), intent); err != nil {
		t.Fatalf("Decoding the fwall YAML: %v", err)
	}
	if diff := cmp.Diff(utiltesting.FwallHPAIntent("ns").Obj(), intent); diff != "" {
		t.Errorf("The fwall YAML is not the builders' example (-builders,+YAML):\n%s", diff)
	}
	if errs := ValidateHPAIntent(intent); len(errs) > 0 {
		t.Errorf("ValidateHPAIntent() refused the fwall example:\n%s", formatErrors(errs))
	}

	raw, err := yaml.YAMLToJSON([]byte(fwallYAML))
	if err != nil {
		t.Fatalf("Converting the fwall YAML to JSON: %v", err)
	}
	if errs := newAdmission(t).create(t.Context(), decodeBody(t, raw)); len(errs) > 0 {
		t.Errorf("Admission refused the fwall example as written:\n%s", formatErrors(errs))
	}
}

// TestAdmissionSeesSpelling pins the one known difference between Go and the
// CRD, described in the package documentation: text sent as written keeps
// its spelling, and the CRD refuses some whole numbers written with a
// fraction that Go, which sees only values, accepts. If admission starts
// accepting one of these, the documentation is out of date.
func TestAdmissionSeesSpelling(t *testing.T) {
	cases := map[string]struct {
		consumer string
		want     string
	}{
		"cpu 2000m with exclusiveCPU": {
			consumer: `
    exclusiveCPU: true
    requirements:
    - {name: cpu, resource: {name: cpu, requests: 2000m, limits: 2000m}}
    - {name: memory, resource: {name: memory, requests: 1Gi, limits: 1Gi}}`,
			want: msgExclusiveCPU,
		},
		"1000.0 with units": {
			consumer: `
    requirements:
    - {name: memory, resource: {name: memory, requests: "1000.0", units: MB}}`,
			want: msgUnitsNeedIntegers,
		},
		"-0": {
			consumer: `
    requirements:
    - {name: cpu, resource: {name: cpu, requests: "-0"}}`,
			want: msgNegativeAmount,
		},
		"1e-1000, which Go rounds up to 1n": {
			consumer: `
    requirements:
    - {name: cpu, resource: {name: cpu, requests: "1e-1000"}}`,
			want: msgLongExponent,
		},
		"0e1000, which is zero": {
			consumer: `
    requirements:
    - {name: cpu, resource: {name: cpu, requests: "0e1000"}}`,
			want: msgLongExponent,
		},
	}
	a := newAdmission(t)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := []byte(`
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata: {name: web, namespace: ns}
spec:
  placementRef: {name: web}
  consumers:
  - name: app
    target: {apiVersion: apps/v1, kind: Deployment, name: app, container: main}` + tc.consumer + "\n")
			intent := &v1alpha1.HPAIntent{}
			if err := yaml.UnmarshalStrict(doc, intent); err != nil {
				t.Fatalf("Decoding the intent: %v", err)
			}
			if errs := ValidateHPAIntent(intent); len(errs) > 0 {
				t.Errorf("ValidateHPAIntent() refused the intent:\n%s", formatErrors(errs))
			}
			raw, err := yaml.YAMLToJSON(doc)
			if err != nil {
				t.Fatalf("Converting the intent to JSON: %v", err)
			}
			got := a.create(t.Context(), decodeBody(t, raw))
			if len(got) != 1 || !strings.Contains(got[0].Error(), tc.want) {
				t.Errorf("Admission errors:\n%swant only %q", formatErrors(got), tc.want)
			}
		})
	}
}

func formatErrors(errs field.ErrorList) string {
	var b strings.Builder
	for _, err := range errs {
		fmt.Fprintf(&b, "  %s\n", err.Error())
	}
	return b.String()
}

// TestAdmissionNamesTheAmount checks that the CRD reports an amount too
// large at the amount itself, requests or limits, as Go does, and not only
// at the resource that holds it, which TestAdmissionAgrees would accept.
func TestAdmissionNamesTheAmount(t *testing.T) {
	a := newAdmission(t)
	for _, name := range []string{
		"cpu 1e19",
		"cpu 1e308 in limits alone",
		"1e300 with units TiB is too large, not fractional",
		"too large in the second requirement",
		"requests and limits both too large",
	} {
		t.Run(name, func(t *testing.T) {
			tc := validationCases()[name]
			type problem struct{ Field, Detail string }
			var want, got []problem
			for _, e := range tc.want {
				want = append(want, problem{e.Field, e.Detail})
			}
			for _, e := range a.create(t.Context(), requestBody(t, tc.intent)) {
				got = append(got, problem{e.Field, e.Detail})
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Admission errors (-want,+got):\n%s", diff)
			}
		})
	}
}
