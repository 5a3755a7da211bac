// Package plugins holds fleetfit's scheduling plugins, one package each, and the registry that
// names them. Adding a plugin is a new package and one line in NewRegistry.
package plugins

import (
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/addon"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/balance"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/hardwarefit"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/predicate"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/resource"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/steady"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/tainttoleration"
)

// NewRegistry returns every built-in plugin by name. Prioritizer names are the builtIn names a
// Placement's prioritizerPolicy uses.
func NewRegistry() framework.Registry {
	return framework.Registry{
		balance.Name:               balance.New,
		steady.Name:                steady.New,
		resource.AllocatableCPU:    resource.NewAllocatableCPU,
		resource.AllocatableMemory: resource.NewAllocatableMemory,
		resource.Allocatable:       resource.NewAllocatable,
		resource.RatioCPU:          resource.NewRatioCPU,
		resource.RatioMemory:       resource.NewRatioMemory,
		resource.Ratio:             resource.NewRatio,
		addon.Name:                 addon.New,
		predicate.Name:             predicate.New,
		tainttoleration.Name:       tainttoleration.New,
		hardwarefit.Name:           hardwarefit.New,
	}
}
