package framework

import "context"

// SplitPlugin divides the replicas of a placement's split intents among the clusters the
// cycle selected. The scheduler keeps the clusters that get a share in any split and drops
// the others, so a split placement decides as few clusters as hold its replicas (or as its
// policy spreads them over).
type SplitPlugin interface {
	Plugin
	// Split returns one division per split intent of the request, for selected (cluster
	// indexes in selection order: the clusters the placement keeps first, then by score);
	// none when the request splits nothing.
	Split(ctx context.Context, state *CycleState, snap *Snapshot, req *Request, selected []int) []Division
}

// Division is how one intent's replicas are divided among the selected clusters.
type Division struct {
	// Intent is the HPAIntent's name.
	Intent string
	// Total is the replicas divided.
	Total int32
	// Clusters are the cluster indexes divided over, Shares their shares (0: none) and
	// Capacity how many replicas each could hold (-1: not counted, as the clusters before it
	// held the replicas), parallel to Clusters.
	Clusters []int
	Shares   []int32
	Capacity []int32
	// Unplaced is what no selected cluster has room for.
	Unplaced int32
}
