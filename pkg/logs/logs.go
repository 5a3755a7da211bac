// Package logs names the verbosity levels fleetfit logs at, so that a call site says what kind
// of line it writes rather than a bare number, and so that every controller, the hub's and the
// agent's, puts the same kind of line at the same level:
//
//	logger.V(logs.Changes).Info("Wrote ClusterInventory", "revision", rev)
//
// Errors and what an operator must see are logged without V (level 0). The numbers follow
// Kubernetes' logging conventions (2 for the steady state of a service, 4 for debugging), so
// -v means for fleetfit what it means for the components around it.
package logs

const (
	// Changes logs what fleetfit changes and the decisions behind it, one line each: a write
	// to an API object, a write retried because another writer got there first, a pod or
	// request refused, a placement left waiting. The controllers write only on change and at
	// a bounded rate, so this level is cheap enough to keep on in production.
	Changes = 2

	// Debug logs detail per request and per item, more lines than production wants: an HTTP
	// request served, a key requeued, an expression that failed for one cluster, a write that
	// found its object changed and waits for the cache to catch up.
	Debug = 4
)
