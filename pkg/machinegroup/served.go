package machinegroup

import (
	"k8s.io/client-go/discovery"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/apiserved"
)

// Served says whether the cluster behind d serves fleetfit.io's MachineGroups,
// that is whether its CRD is installed; an error is a failed look-up, not an
// answer.
func Served(d discovery.ServerResourcesInterface) (bool, error) {
	return apiserved.Served(d, v1alpha1.SchemeGroupVersion.String(), "machinegroups")
}
