package steady

import (
	"context"
	"strings"
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

// requestCounts returns the hub API server's count of requests so far (framework.APIRequests).
func requestCounts(ctx context.Context, b *testing.B, hub *framework.ControlPlane) map[string]float64 {
	out, err := framework.APIRequests(ctx, hub)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// writeVerbs are the verbs of apiserver_request_total that change something.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// notTheHub are the resources written during the phase by others than fleetfit-hub: the
// reports themselves, the API server's own bookkeeping, and the reviews the hub asks for when
// the benchmark reads its metrics (fleetfit-hub runs without leader election, so it writes no
// Lease either).
var notTheHub = map[string]bool{
	"clusterinventories/status": true,
	"leases":                    true, "endpoints": true, "endpointslices": true, "configmaps": true,
	"flowschemas/status": true, "prioritylevelconfigurations/status": true, "apiservices/status": true,
	"tokenreviews": true, "subjectaccessreviews": true,
}

// hubWrites sums the writes of counts (see requestCounts) that fleetfit-hub made.
func hubWrites(counts map[string]float64) float64 {
	var total float64
	for key, n := range counts {
		verb, resource, _ := strings.Cut(key, " ")
		if writeVerbs[verb] && !notTheHub[resource] {
			total += n
		}
	}
	return total
}
