package framework

import (
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
)

// IntentCompiler gives the compiled form of an HPAIntent. The hub's cache is one: it compiles
// a stored intent once per UID and generation and hands the same hpa.Intent to every reader
// (the scheduling cycles, the reservations, the intents' status and delivery).
type IntentCompiler interface {
	// Intent returns the compiled intent, which the caller must not modify, or the error of
	// hpa.Compile.
	Intent(in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error)
}

// CompiledIntent returns the compiled form of an intent from c, or compiles it afresh when c
// is nil. It is the one fallback of the readers that may be given no compiler (snapshots and
// targets built by tests and simulations): what they compile is theirs alone and kept by
// no one.
func CompiledIntent(c IntentCompiler, in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error) {
	if c != nil {
		return c.Intent(in)
	}
	return hpa.Compile(in)
}

// Intent returns the compiled form of an intent from the compiler the snapshot was built
// with (see CompiledIntent).
func (s *Snapshot) Intent(in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error) {
	return CompiledIntent(s.intents, in)
}
