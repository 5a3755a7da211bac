// Package manifests embeds the CustomResourceDefinitions fleetfit installs:
// its own (generated from pkg/apis) and the Open Cluster Management ones it
// works with (copied from open-cluster-management.io/api by `make generate`), and, apart, the
// optional SIG-Multicluster ones (copied from sigs.k8s.io/cluster-inventory-api).
// The CLI's install commands and the test framework both read them from here,
// so what is tested is what is installed.
package manifests

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed crds/hub/*.yaml crds/spoke/*.yaml crds/optional/*.yaml
var crds embed.FS

// HubCRDs returns the CRDs a hub cluster needs, sorted by file name.
func HubCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return load("crds/hub")
}

// SpokeCRDs returns the CRDs a managed cluster needs, sorted by file name.
func SpokeCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return load("crds/spoke")
}

// SIGMulticlusterCRDs returns the SIG-Multicluster ClusterProfile and PlacementDecision CRDs
// (multicluster.x-k8s.io). No install applies them unless asked: where they are installed,
// OCM's registration writes ClusterProfiles and fleetfit-hub mirrors its PlacementDecisions.
func SIGMulticlusterCRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return load("crds/optional")
}

func load(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	entries, err := fs.ReadDir(crds, dir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded %s: %w", dir, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(names))
	for _, name := range names {
		raw, err := crds.ReadFile(path.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("reading embedded %s: %w", name, err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", name, err)
		}
		out = append(out, crd)
	}
	return out, nil
}
