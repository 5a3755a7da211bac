package machinegroup

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Served says whether the cluster behind d serves fleetfit.io's MachineGroups,
// that is whether its CRD is installed; an error is a failed look-up, not an
// answer.
func Served(d discovery.ServerResourcesInterface) (bool, error) {
	gv := v1alpha1.SchemeGroupVersion.String()
	list, err := d.ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discovering %s: %w", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == "machinegroups" {
			return true, nil
		}
	}
	return false, nil
}
