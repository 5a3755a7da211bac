package apis

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// TestFleetServesCRDs checks that the hub serves the OCM hub APIs and
// fleetfit's hub types (inventories, intents), and that spokes serve the
// managed-cluster side only (machine groups among fleetfit's types): each side
// serves exactly the resources of its list in each group version.
func TestFleetServesCRDs(t *testing.T) {
	hubWant := map[string][]string{
		"cluster.open-cluster-management.io/v1":       {"managedclusters"},
		"cluster.open-cluster-management.io/v1beta1":  {"placementdecisions", "placements"},
		"cluster.open-cluster-management.io/v1beta2":  {"managedclustersetbindings", "managedclustersets"},
		"cluster.open-cluster-management.io/v1alpha1": {"addonplacementscores"},
		"work.open-cluster-management.io/v1":          {"manifestworks"},
		"work.open-cluster-management.io/v1alpha1":    {"manifestworkreplicasets"},
		"addon.open-cluster-management.io/v1alpha1":   {"addondeploymentconfigs", "addontemplates", "clustermanagementaddons", "managedclusteraddons"},
		"fleetfit.io/v1alpha1":                        {"clusterinventories", "hpaintents"},
	}
	spokeWant := map[string][]string{
		"cluster.open-cluster-management.io/v1alpha1": {"clusterclaims"},
		"work.open-cluster-management.io/v1":          {"appliedmanifestworks"},
		"fleetfit.io/v1alpha1":                        {"machinegroups", "machinenodepools"},
	}
	if diff := cmp.Diff(hubWant, served(t, fleet.Hub.AdminConfig(), hubWant)); diff != "" {
		t.Errorf("hub serves (-want,+got):\n%s", diff)
	}
	for _, spoke := range fleet.Spokes {
		if diff := cmp.Diff(spokeWant, served(t, spoke.AdminConfig(), spokeWant)); diff != "" {
			t.Errorf("%s serves (-want,+got):\n%s", spoke.Name, diff)
		}
	}
}

// served lists the top-level resources (no subresources) the server has in
// each of the group versions of want.
func served(t *testing.T, cfg *rest.Config, want map[string][]string) map[string][]string {
	t.Helper()
	dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
	got := map[string][]string{}
	for gv := range want {
		list, err := dc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("discovering %s: %v", gv, err)
		}
		names := sets.New[string]()
		for _, r := range list.APIResources {
			if !strings.Contains(r.Name, "/") {
				names.Insert(r.Name)
			}
		}
		got[gv] = sets.List(names)
	}
	return got
}
