// Package conflict tells update conflicts from real failures, for the agent's and the hub's
// controllers alike.
package conflict

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Only reports whether err, and every error joined or wrapped in it, is an update conflict:
// a write based on an object someone else changed since. Such an error is the normal
// outcome of several writers sharing an object (the hub's controllers write different parts
// of an HPAIntent's status, agents and users edit what the hub reads), and a retry that reads
// the latest object succeeds, so callers log it quietly (at logs.Changes) and requeue; an error joined
// with anything else is a real failure. Only(nil) is false.
func Only(err error) bool {
	switch e := err.(type) {
	case nil:
		return false
	case interface{ Unwrap() []error }:
		errs := e.Unwrap()
		if len(errs) == 0 {
			return false
		}
		for _, inner := range errs {
			if !Only(inner) {
				return false
			}
		}
		return true
	case interface{ Unwrap() error }:
		// Not apierrors.IsConflict on the whole chain: it finds a conflict anywhere in it,
		// beside real failures too.
		if inner := e.Unwrap(); inner != nil {
			return Only(inner)
		}
	}
	return apierrors.IsConflict(err)
}
