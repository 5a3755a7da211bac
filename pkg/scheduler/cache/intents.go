package cache

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
)

// compiledIntents holds the compiled form of stored HPAIntents by UID, each for one
// generation: the scheduling cycles, the reservations, the intents' status and delivery all
// read the same hpa.Intent, compiled once per generation. It has a lock of its own, so that
// compiling never holds the cache's.
type compiledIntents struct {
	mu sync.RWMutex
	m  map[types.UID]*hpa.Intent
}

// Intent returns the compiled form of an intent, compiling it when the cache holds none for
// its UID and generation and keeping it, in place of an older generation's, for the next
// reader. An intent without a UID is not
// a stored one (a dry run's, whose posted identity is cleared): it is compiled for the caller
// alone and never kept, so it can neither read nor replace what a stored intent compiles to.
// An intent that does not compile is not kept either: its error is cheap to find again.
func (c *Cache) Intent(in *fleetfitv1alpha1.HPAIntent) (*hpa.Intent, error) {
	if in.UID == "" {
		return hpa.Compile(in)
	}
	ci := &c.intents
	ci.mu.RLock()
	cached, ok := ci.m[in.UID]
	ci.mu.RUnlock()
	if ok && cached.Generation == in.Generation && cached.Namespace == in.Namespace && cached.Name == in.Name {
		return cached, nil
	}
	compiled, err := hpa.Compile(in)
	if err != nil {
		return nil, err
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	// A reader of a newer generation may have stored it meanwhile; the newer one stays.
	if cur, ok := ci.m[in.UID]; !ok || cur.Generation <= compiled.Generation {
		ci.m[in.UID] = compiled
	}
	return compiled, nil
}

// DeleteIntent forgets the compiled form of a deleted intent.
func (c *Cache) DeleteIntent(in *fleetfitv1alpha1.HPAIntent) {
	ci := &c.intents
	ci.mu.Lock()
	defer ci.mu.Unlock()
	delete(ci.m, in.UID)
}
