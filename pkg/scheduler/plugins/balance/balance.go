// Package balance holds the Balance prioritizer: it spreads placements over the fleet by
// preferring the clusters that other placements decide least.
//
// The score is OCM's: a cluster that no other placement decides scores 100; otherwise it scores
// 2*int64(100*(0.5-count/maxCount)), where count is the number of other placements that decide
// the cluster and maxCount is the largest such count over the whole snapshot, so the busiest
// cluster scores -100. The placement being scheduled never counts against itself.
package balance

import (
	"context"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Name is the builtIn name of the prioritizer.
const Name = "Balance"

// Balance scores clusters by how many other placements decide them.
type Balance struct{}

var _ framework.ScorePlugin = &Balance{}

// New is the plugin's factory; Balance takes no arguments.
func New(_ framework.Handle, _ framework.Args) (framework.Plugin, error) { return &Balance{}, nil }

// Name returns the builtIn name.
func (*Balance) Name() string { return Name }

// Score reads the snapshot's decision counts, which cover the decisions of every placement, and
// takes the placement's own decision (at most one per cluster) out of each count. maxCount is
// taken over all clusters of the snapshot, not only the feasible ones, as OCM takes it over all
// decisions.
func (*Balance) Score(_ context.Context, _ *framework.CycleState, snap *framework.Snapshot, req *framework.Request, feasible *framework.Bitset, scores []int64) *framework.Status {
	var maxCount int64
	for i := range snap.NumClusters() {
		maxCount = max(maxCount, othersCount(snap, req, i))
	}
	feasible.ForEach(func(i int) {
		count := othersCount(snap, req, i)
		if count == 0 {
			scores[i] = framework.MaxClusterScore
			return
		}
		usage := float64(count) / float64(maxCount)
		scores[i] = 2 * int64(float64(framework.MaxClusterScore)*(0.5-usage))
	})
	return nil
}

// othersCount returns how many placements other than req's decide cluster i.
func othersCount(snap *framework.Snapshot, req *framework.Request, i int) int64 {
	n := int64(snap.DecisionCount(i))
	if req.Decided.Has(i) {
		n--
	}
	return max(n, 0)
}
