// Package plugins holds fleetfit's scheduling plugins, one package each, and the registry that
// names them. Adding a plugin is a new package and one line in NewRegistry.
package plugins

import (
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// NewRegistry returns every built-in plugin by name. Prioritizer names are the builtIn names a
// Placement's prioritizerPolicy uses.
func NewRegistry() framework.Registry {
	return framework.Registry{}
}
