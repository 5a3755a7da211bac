// Command boundfields adds the bounds controller-gen leaves out to the CRDs it
// writes:
//
//   - The length of every resource.Quantity. The API server estimates the
//     cost of CEL rules from the largest value a field can hold; a quantity is
//     an int-or-string that controller-gen leaves unbounded, which makes any
//     rule that compares requests and limits too expensive to admit. No real
//     quantity needs more than 64 characters.
//   - The range of every int32. The API server does not check the int32
//     format, so without a maximum it stores replicas: 4294967297, which no
//     Go client can then decode: one such object would make every list of its
//     kind fail, and with it the informers of the hub and the agents.
//
// Usage: go run ./manifests/internal/boundfields FILE...
package main

import (
	"fmt"
	"os"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

const maxQuantityLength = 64

// The range of an int32.
const (
	minInt32 = -1 << 31
	maxInt32 = 1<<31 - 1
)

func main() {
	for _, path := range os.Args[1:] {
		if err := bound(path); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
	}
}

func bound(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(raw, crd); err != nil {
		return err
	}
	for i := range crd.Spec.Versions {
		if v := crd.Spec.Versions[i].Schema; v != nil && v.OpenAPIV3Schema != nil {
			walk(v.OpenAPIV3Schema)
		}
	}
	out, err := yaml.Marshal(crd)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte("---\n"), out...), 0o644)
}

func walk(s *apiextensionsv1.JSONSchemaProps) {
	if s.XIntOrString && s.Pattern != "" && s.MaxLength == nil {
		n := int64(maxQuantityLength)
		s.MaxLength = &n
	}
	if s.Type == "integer" && s.Format == "int32" {
		if s.Minimum == nil {
			lo := float64(minInt32)
			s.Minimum = &lo
		}
		if s.Maximum == nil {
			hi := float64(maxInt32)
			s.Maximum = &hi
		}
	}
	for k, p := range s.Properties {
		walk(&p)
		s.Properties[k] = p
	}
	if s.Items != nil && s.Items.Schema != nil {
		walk(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walk(s.AdditionalProperties.Schema)
	}
}
