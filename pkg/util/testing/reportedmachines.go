package testing

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// MakeReportedMachineType is a machine type of 8 cores and 32Gi as an agent reports it, with
// maximum machines of which reserved are free (running reservation pods) and used taken by
// guests.
func MakeReportedMachineType(name string, maximum, reserved, used int32) v1alpha1.ReportedMachineType {
	return v1alpha1.ReportedMachineType{
		Name:  name,
		Spec:  v1alpha1.MachineTypeSpec{CPU: resource.MustParse("8"), Memory: resource.MustParse("32Gi")},
		Usage: v1alpha1.MachineUsage{Maximum: maximum, Reserved: reserved, Used: used},
	}
}

// MakeReportedMachineGroup is a Ready MachineGroup as an agent reports it.
func MakeReportedMachineGroup(name string, types ...v1alpha1.ReportedMachineType) v1alpha1.ReportedMachineGroup {
	return v1alpha1.ReportedMachineGroup{Name: name, Ready: true, MachineTypes: types}
}
