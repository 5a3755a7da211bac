// Package registration checks that managed clusters join the test fleet's hub
// the way OCM's users join them — OCM's registration controller and add-on
// manager on the hub, a registration agent per spoke with a bootstrap
// kubeconfig, CSRs approved and signed, hubAcceptsClient — and that what OCM's
// agent then keeps on the hub comes from the spokes: the clusters' conditions
// and lease, their capacity from the spokes' Nodes, their ClusterClaims, and
// the hub credentials of an AddOnTemplate add-on.
package registration

import (
	"context"
	"sync"
	"testing"

	"github.com/fleetfit/fleetfit/test/framework"
)

var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 2, framework.Options{}, &fleet)
}

// joinOptions are the package's: at most two custom ClusterClaims, any claim
// ending in fleetfit.io reported beyond them, and work agents with the hub
// identity the registration agents obtained.
var joinOptions = framework.JoinOptions{
	Agent: framework.RegistrationAgentOptions{
		MaxCustomClusterClaims:       2,
		ReservedClusterClaimSuffixes: []string{"fleetfit.io"},
	},
	WorkAgents: true,
}

var join = struct {
	once sync.Once
	j    *framework.Join
	err  error
}{}

// joined joins the fleet's spokes once for the package and returns the join,
// failing the test when it failed.
func joined(t *testing.T) *framework.Join {
	t.Helper()
	join.once.Do(func() {
		join.j, join.err = fleet.JoinSpokes(context.Background(), joinOptions)
		if join.err == nil {
			t.Logf("%d spokes joined in %v", len(fleet.Spokes), join.j.Took)
		}
	})
	if join.err != nil {
		t.Fatal(join.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("OCM logs:\n%s", join.j.LogTails(40))
		}
	})
	return join.j
}
