// Package apiserved answers whether a cluster serves an API resource, which is how fleetfit
// tells whether an optional CRD (MachineGroups, OCM's ClusterClaims) is installed or a
// cluster is an OCM hub at all.
package apiserved

import (
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
)

// Served reports whether the cluster behind d serves resource (its plural, e.g.
// "machinegroups") in groupVersion. A group version the cluster does not serve is an answer
// (false); any other failed look-up is an error, not an answer.
func Served(d discovery.ServerResourcesInterface, groupVersion, resource string) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(groupVersion)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }), nil
}
