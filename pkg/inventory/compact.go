package inventory

import (
	"slices"
)

// compact returns the buckets of one shape in a deterministic order and, when
// there are more than limit of them, merges them into limit groups first.
// A group reports its members' component-wise minimum with their total
// count: every node of the group has at least that much free, so merging only
// ever makes the summary claim less, never more. truncated reports whether
// anything was merged.
//
// Which buckets to merge is a heuristic; the guarantee above holds whatever
// it chooses. It greedily merges the pair of groups that loses the least free
// capacity, counted per node and relative to the shape's allocatable, after a
// first pass that cuts long lists down to 4×limit groups of neighbours by
// size so the greedy pass stays quadratic in limit, not in the node count.
func compact(buckets []bucket, alloc []int64, limit int) ([]bucket, bool) {
	slices.SortFunc(buckets, compareBuckets)
	if len(buckets) <= limit {
		return buckets, false
	}

	size := func(free []int64) float64 {
		s := 0.0
		for i, f := range free {
			s += float64(f) / float64(alloc[i])
		}
		return s
	}
	type group struct {
		min   []int64
		count int
		size  float64
	}
	newGroup := func(min []int64, count int) group { return group{min: min, count: count, size: size(min)} }
	merged := func(a, b group) group {
		m := make([]int64, len(a.min))
		for i := range m {
			m[i] = min(a.min[i], b.min[i])
		}
		return newGroup(m, a.count+b.count)
	}

	// First pass: contiguous runs in order of decreasing size. The stable
	// sort keeps the lexicographic order among equal sizes, so the runs are
	// deterministic.
	slices.SortStableFunc(buckets, func(a, b bucket) int {
		sa, sb := size(a.free), size(b.free)
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	n := min(len(buckets), 4*limit)
	groups := make([]group, n)
	for g := range n {
		lo, hi := g*len(buckets)/n, (g+1)*len(buckets)/n
		acc := newGroup(slices.Clone(buckets[lo].free), buckets[lo].count)
		for _, b := range buckets[lo+1 : hi] {
			acc = merged(acc, newGroup(b.free, b.count))
		}
		groups[g] = acc
	}

	// Greedy pass over a cost matrix; only the merged group's row changes
	// after each step.
	loss := func(a, b group) float64 {
		m := merged(a, b)
		return float64(a.count)*(a.size-m.size) + float64(b.count)*(b.size-m.size)
	}
	alive := make([]bool, n)
	cost := make([][]float64, n)
	for i := range n {
		alive[i] = true
		cost[i] = make([]float64, n)
		for j := i + 1; j < n; j++ {
			cost[i][j] = loss(groups[i], groups[j])
		}
	}
	for left := n; left > limit; left-- {
		bi, bj := -1, -1
		for i := range n {
			if !alive[i] {
				continue
			}
			for j := i + 1; j < n; j++ {
				if alive[j] && (bi < 0 || cost[i][j] < cost[bi][bj]) {
					bi, bj = i, j
				}
			}
		}
		groups[bi] = merged(groups[bi], groups[bj])
		alive[bj] = false
		for k := range n {
			if !alive[k] || k == bi {
				continue
			}
			c := loss(groups[bi], groups[k])
			if k < bi {
				cost[k][bi] = c
			} else {
				cost[bi][k] = c
			}
		}
	}

	out := make([]bucket, 0, limit)
	for i, g := range groups {
		if alive[i] {
			out = append(out, bucket{free: g.min, count: g.count})
		}
	}
	slices.SortFunc(out, compareBuckets)
	// Distinct groups can end with the same minimum; report it once.
	dedup := out[:1]
	for _, b := range out[1:] {
		last := &dedup[len(dedup)-1]
		if slices.Equal(last.free, b.free) {
			last.count += b.count
			continue
		}
		dedup = append(dedup, b)
	}
	return dedup, true
}

// compareBuckets orders free vectors from the most free to the least,
// comparing resources in name order.
func compareBuckets(a, b bucket) int {
	return -slices.Compare(a.free, b.free)
}
