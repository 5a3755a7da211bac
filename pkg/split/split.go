// Package split divides a workload's replicas among clusters: how many each decided cluster
// runs, from what each can hold (per-node fit, counted by the caller with pkg/inventory), the
// policy, and the shares the clusters already run. It is pure arithmetic, shared by the hub's
// scheduler, explain and simulate.
//
// Shares hold still: a cluster keeps the share it runs while it stays chosen and the total
// does not change. A larger total fills the clusters that run the workload first, as far as
// their room goes, and then new clusters in preference order; a smaller one takes replicas
// back from the last clusters first. Only Even and Weights recompute every share when the
// total or the clusters change, since their shares are defined by the set.
package split

import (
	"slices"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Cluster is one cluster a share may go to.
type Cluster struct {
	Name string
	// Capacity is how many replicas the cluster can hold for the workload in all: the
	// replicas it runs now (Previous) included when they are running, and what its free
	// nodes take besides.
	Capacity int32
	// Weight is the cluster's weight under SplitByWeights (0 keeps it out); other policies
	// ignore it.
	Weight int32
	// Previous is the share the cluster runs now (0 when it runs none).
	Previous int32
}

// Input is one division.
type Input struct {
	Policy       v1alpha1.SplitPolicy
	Total, Min   int32
	AllOrNothing bool
	// Clusters in preference order: those that run the workload first, then by score.
	Clusters []Cluster
}

// Result is a division: Shares[i] is the share of Input.Clusters[i] (0: the cluster gets
// none and is not needed), Unplaced what no cluster has room for.
type Result struct {
	Shares   []int32
	Unplaced int32
}

// Divide divides in.Total among in.Clusters (see the package documentation). No share is
// below in.Min but 0; a new share never exceeds its cluster's capacity; a share the cluster
// already runs is never cut for lack of capacity, only when the total shrinks.
func Divide(in Input) Result {
	n := len(in.Clusters)
	minShare := max(in.Min, 1)
	total := max(in.Total, 0)
	var shares []int32
	switch in.Policy {
	case v1alpha1.SplitEvenly, v1alpha1.SplitByWeights:
		shares = proportional(in, minShare, total)
	default:
		shares = byCapacity(in, minShare, total)
	}
	placed := sum(shares)
	res := Result{Shares: shares, Unplaced: max(total-placed, 0)}
	if in.AllOrNothing && res.Unplaced > 0 {
		// Nothing more is placed until everything fits: the shares already running stay.
		res.Shares = make([]int32, n)
		for i, c := range in.Clusters {
			res.Shares[i] = c.Previous
		}
		res.Unplaced = max(total-sum(res.Shares), 0)
	}
	return res
}

// byCapacity keeps the running shares and fills room in order.
func byCapacity(in Input, minShare, total int32) []int32 {
	n := len(in.Clusters)
	shares := make([]int32, n)
	for i, c := range in.Clusters {
		shares[i] = max(c.Previous, 0)
	}
	placed := sum(shares)
	if placed > total {
		shrink(in.Clusters, shares, placed-total, minShare)
		return shares
	}
	need := total - placed
	// The clusters that run it first, as far as their room goes.
	for i, c := range in.Clusters {
		if need == 0 {
			break
		}
		if shares[i] == 0 {
			continue
		}
		add := min(max(c.Capacity-shares[i], 0), need)
		shares[i] += add
		need -= add
	}
	// Then new clusters in order, each with at least the smallest share. When what is left is
	// less than that, the new shares before give up the difference, as far as they stay at
	// least the smallest themselves: 10 at least 3 each on clusters holding 8 and 8 is 7 and 3,
	// not 8 with 2 waiting.
	var added []int
	for i, c := range in.Clusters {
		if need == 0 {
			break
		}
		if shares[i] > 0 || c.Capacity < minShare {
			continue
		}
		if need < minShare && !lend(shares, added, minShare-need, minShare) {
			break
		}
		if need < minShare {
			need = minShare
		}
		add := min(c.Capacity, need)
		shares[i] = add
		need -= add
		added = append(added, i)
	}
	return shares
}

// lend takes n replicas from the shares at indexes from (the last first), none below least,
// and reports whether it could; it takes nothing when it cannot take all n.
func lend(shares []int32, from []int, n, least int32) bool {
	var spare int32
	for _, i := range from {
		spare += shares[i] - least
	}
	if spare < n {
		return false
	}
	for k := len(from) - 1; k >= 0 && n > 0; k-- {
		i := from[k]
		take := min(n, shares[i]-least)
		shares[i] -= take
		n -= take
	}
	return true
}

// shrink takes excess replicas back, from the last cluster first, each down to the smallest
// share, so that every cluster keeps running the workload; only when that is not enough are
// whole shares taken from the end, and what a whole share took beyond the excess goes back
// to the first clusters with room (or waits, unplaced).
func shrink(cs []Cluster, shares []int32, excess, minShare int32) {
	for i := len(shares) - 1; i >= 0 && excess > 0; i-- {
		if shares[i] == 0 {
			continue
		}
		cut := min(excess, max(shares[i]-minShare, 0))
		shares[i] -= cut
		excess -= cut
	}
	for i := len(shares) - 1; i >= 0 && excess > 0; i-- {
		if shares[i] == 0 {
			continue
		}
		back := shares[i] - excess
		excess -= shares[i]
		shares[i] = 0
		for k := range shares {
			if back <= 0 {
				break
			}
			if shares[k] == 0 {
				continue
			}
			add := min(back, max(cs[k].Capacity, cs[k].Previous)-shares[k])
			if add > 0 {
				shares[k] += add
				back -= add
			}
		}
	}
}

// proportional divides by weight (1 each for Even), capped at capacity; a division that
// gives the same clusters the same total as before keeps the running shares.
func proportional(in Input, minShare, total int32) []int32 {
	n := len(in.Clusters)
	shares := make([]int32, n)
	running := 0
	for _, c := range in.Clusters {
		if c.Previous > 0 {
			running++
		}
	}
	if running > 0 {
		prev := make([]int32, n)
		for i, c := range in.Clusters {
			prev[i] = max(c.Previous, 0)
		}
		if sum(prev) == total {
			return prev
		}
	}
	// Eligible: a positive weight and room for the smallest share (a running share counts
	// as room), at most total/min clusters, in order.
	var eligible []int
	for i, c := range in.Clusters {
		w := c.Weight
		if in.Policy == v1alpha1.SplitEvenly {
			w = 1
		}
		if w > 0 && max(c.Capacity, c.Previous) >= minShare && int32(len(eligible)) < total/minShare {
			eligible = append(eligible, i)
		}
	}
	weight := func(i int) int64 {
		if in.Policy == v1alpha1.SplitEvenly {
			return 1
		}
		return int64(in.Clusters[i].Weight)
	}
	room := func(i int) int32 { return max(in.Clusters[i].Capacity, in.Clusters[i].Previous) }
	// Water-filling: divide what is left among the clusters with room, by weight (largest
	// remainders first, ties in order); a cluster that reaches its room leaves, and its
	// excess is divided again among the others.
	left := total
	open := slices.Clone(eligible)
	for left > 0 && len(open) > 0 {
		var sumW int64
		for _, i := range open {
			sumW += weight(i)
		}
		give := make(map[int]int32, len(open))
		var given int32
		type rem struct {
			i int
			r int64
		}
		var rems []rem
		for _, i := range open {
			q := int64(left) * weight(i)
			give[i] = int32(q / sumW)
			given += give[i]
			rems = append(rems, rem{i, q % sumW})
		}
		slices.SortStableFunc(rems, func(a, b rem) int {
			switch {
			case a.r > b.r:
				return -1
			case a.r < b.r:
				return 1
			}
			return 0
		})
		for k := 0; given < left && k < len(rems); k++ {
			give[rems[k].i]++
			given++
		}
		var next []int
		progress := false
		for _, i := range open {
			add := min(give[i], room(i)-shares[i])
			if add > 0 {
				progress = true
			}
			shares[i] += add
			left -= add
			if shares[i] < room(i) {
				next = append(next, i)
			}
		}
		open = next
		if !progress {
			break
		}
	}
	// No share below the smallest: such a share goes to the first clusters with room.
	for _, i := range eligible {
		if shares[i] > 0 && shares[i] < minShare {
			left += shares[i]
			shares[i] = 0
		}
	}
	for _, i := range eligible {
		if left == 0 {
			break
		}
		if shares[i] == 0 {
			continue
		}
		add := min(left, room(i)-shares[i])
		shares[i] += add
		left -= add
	}
	return shares
}

func sum(s []int32) int32 {
	var t int32
	for _, v := range s {
		t += v
	}
	return t
}
