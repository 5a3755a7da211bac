package framework

import (
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
)

// IntentCompiler gives the compiled form of an HPAIntent. The hub's cache is one: it compiles
// a stored intent once per UID and generation and hands the same hpa.Intent to every reader.
type IntentCompiler interface {
	// Intent returns the compiled intent, which the caller must not modify, or the error of
	// hpa.Compile.
	Intent(in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error)
}

// Intent returns the compiled form of an intent from the compiler the snapshot was built
// with, or compiles it afresh when it has none (snapshots built by tests and simulations).
func (s *Snapshot) Intent(in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error) {
	if s.intents != nil {
		return s.intents.Intent(in)
	}
	return hpa.Compile(in)
}
