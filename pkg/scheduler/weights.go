package scheduler

import (
	"fmt"
	"strings"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// coordinate identifies one prioritizer of a placement, with its weight.
type coordinate struct {
	// key identifies the coordinate: later configurations of the same key override earlier ones.
	key string
	// name is what explain and events show: the builtIn name, or "AddOn/<resource>/<score>"
	// as OCM names it.
	name string
	// plugin is the registry entry to create it from.
	plugin string
	args   framework.Args
	weight int32
}

// Weights are the prioritizer weights that apply to every placement unless it overrides them.
type Weights struct {
	// Defaults apply in the Additive mode only (OCM: Balance=1, Steady=1).
	Defaults []WeightedPlugin
	// Always apply in both modes, unless the placement configures the same builtIn; they carry
	// fleetfit's own prioritizers (the PreferNoSelect penalty, optional HPA requirements).
	Always []WeightedPlugin
}

// WeightedPlugin is a builtIn prioritizer with a weight.
type WeightedPlugin struct {
	Name   string
	Weight int32
}

// prioritizerCoordinates resolves a placement's prioritizer policy into an ordered list of
// weighted coordinates: defaults first (Additive), then the placement's configurations in
// their order, then the always-on prioritizers. The order is stable so explain output and
// score sums never depend on map order. Weight 0 disables a prioritizer.
func (w Weights) prioritizerCoordinates(p *clusterv1beta1.Placement) ([]coordinate, *framework.Status) {
	var out []coordinate
	pos := map[string]int{}
	put := func(c coordinate) {
		if i, ok := pos[c.key]; ok {
			out[i] = c
			return
		}
		pos[c.key] = len(out)
		out = append(out, c)
	}
	switch mode := p.Spec.PrioritizerPolicy.Mode; mode {
	case "", clusterv1beta1.PrioritizerPolicyModeAdditive:
		for _, d := range w.Defaults {
			put(builtIn(d.Name, d.Weight))
		}
	case clusterv1beta1.PrioritizerPolicyModeExact:
	default:
		return nil, framework.Misconfiguredf("incorrect prioritizer policy mode: %s", mode)
	}
	for _, cfg := range p.Spec.PrioritizerPolicy.Configurations {
		sc := cfg.ScoreCoordinate
		if sc == nil {
			return nil, framework.Misconfiguredf("scoreCoordinate field is required")
		}
		switch sc.Type {
		case "", clusterv1beta1.ScoreCoordinateTypeBuiltIn:
			if sc.BuiltIn == "" {
				return nil, framework.Misconfiguredf("builtIn should not be empty when the scoreCoordinate type is BuiltIn")
			}
			put(builtIn(sc.BuiltIn, cfg.Weight))
		case clusterv1beta1.ScoreCoordinateTypeAddOn:
			if sc.AddOn == nil {
				return nil, framework.Misconfiguredf("addOn should not be empty")
			}
			name := "AddOn/" + sc.AddOn.ResourceName + "/" + sc.AddOn.ScoreName
			put(coordinate{key: name, name: name, plugin: "AddOn", args: framework.Args{AddOn: sc.AddOn}, weight: cfg.Weight})
		default:
			return nil, framework.Misconfiguredf("incorrect scoreCoordinate type: %s", sc.Type)
		}
	}
	for _, a := range w.Always {
		if _, configured := pos["BuiltIn/"+a.Name]; !configured {
			put(builtIn(a.Name, a.Weight))
		}
	}
	enabled := out[:0]
	for _, c := range out {
		if c.weight != 0 {
			enabled = append(enabled, c)
		}
	}
	return enabled, nil
}

func builtIn(name string, weight int32) coordinate {
	plugin, param, _ := strings.Cut(name, ":")
	return coordinate{key: "BuiltIn/" + name, name: name, plugin: plugin, args: framework.Args{Param: param}, weight: weight}
}

func (c coordinate) String() string { return fmt.Sprintf("%s(%d)", c.name, c.weight) }
