package plugins

import (
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/balance"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/hardwarefit"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/predicate"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/steady"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins/tainttoleration"
)

// DefaultProfile is what the hub and the CLI run: OCM's filters and default prioritizer
// weights (Balance=1, Steady=1 in the Additive mode), plus fleetfit's HardwareFit filter and
// its always-on prioritizers: the penalty for untolerated PreferNoSelect taints and the
// optional hardware requirements of HPAIntents.
func DefaultProfile() scheduler.Profile {
	return scheduler.Profile{
		Filters: []string{predicate.Name, tainttoleration.Name, hardwarefit.Name},
		Weights: scheduler.Weights{
			Defaults: []scheduler.WeightedPlugin{{Name: balance.Name, Weight: 1}, {Name: steady.Name, Weight: 1}},
			Always:   []scheduler.WeightedPlugin{{Name: tainttoleration.Name, Weight: 1}, {Name: hardwarefit.Name, Weight: 1}},
		},
	}
}
