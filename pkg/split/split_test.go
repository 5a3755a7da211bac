package split

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

func clusters(capacities ...int32) []Cluster {
	out := make([]Cluster, len(capacities))
	for i, c := range capacities {
		out[i] = Cluster{Name: fmt.Sprintf("c%d", i), Capacity: c, Weight: 1}
	}
	return out
}

func running(cs []Cluster, shares ...int32) []Cluster {
	for i := range shares {
		cs[i].Previous = shares[i]
	}
	return cs
}

func TestDivide(t *testing.T) {
	cases := map[string]struct {
		in   Input
		want Result
	}{
		"by capacity, in order, as few clusters as hold the total": {
			in:   Input{Total: 10, Min: 1, Clusters: clusters(4, 3, 5)},
			want: Result{Shares: []int32{4, 3, 3}},
		},
		"by capacity, a cluster below the smallest share is skipped": {
			in:   Input{Total: 10, Min: 4, Clusters: clusters(4, 3, 5, 8)},
			want: Result{Shares: []int32{4, 0, 5, 0}, Unplaced: 1},
		},
		"by capacity, the rest below the smallest share is made up by the clusters before": {
			in:   Input{Total: 10, Min: 3, Clusters: clusters(8, 8)},
			want: Result{Shares: []int32{7, 3}},
		},
		"by capacity, the rest below the smallest share waits when the clusters before cannot make it up": {
			in:   Input{Total: 7, Min: 4, Clusters: clusters(5, 8)},
			want: Result{Shares: []int32{5, 0}, Unplaced: 2},
		},
		"by capacity, running shares do not make up the rest": {
			in:   Input{Total: 10, Min: 3, Clusters: running(clusters(8, 8), 8)},
			want: Result{Shares: []int32{8, 0}, Unplaced: 2},
		},
		"by capacity, a scale-up fills the running clusters first": {
			in:   Input{Total: 14, Min: 1, Clusters: running(clusters(4, 3, 5, 9), 4, 3, 3)},
			want: Result{Shares: []int32{4, 3, 5, 2}},
		},
		"by capacity, running shares stay whatever the room": {
			in:   Input{Total: 10, Min: 1, Clusters: running(clusters(0, 0, 9), 4, 3, 3)},
			want: Result{Shares: []int32{4, 3, 3}},
		},
		"by capacity, a scale-down takes from the last first, keeping every cluster": {
			in:   Input{Total: 7, Min: 2, Clusters: running(clusters(4, 3, 5), 4, 3, 3)},
			want: Result{Shares: []int32{3, 2, 2}},
		},
		"by capacity, a scale-down below the smallest shares drops the last clusters": {
			in:   Input{Total: 5, Min: 2, Clusters: running(clusters(4, 3, 5), 4, 3, 3)},
			want: Result{Shares: []int32{3, 2, 0}},
		},
		"by capacity, not enough room places what fits": {
			in:   Input{Total: 20, Min: 1, Clusters: clusters(4, 3, 5)},
			want: Result{Shares: []int32{4, 3, 5}, Unplaced: 8},
		},
		"all or nothing places nothing when the total does not fit": {
			in:   Input{Total: 20, Min: 1, AllOrNothing: true, Clusters: clusters(4, 3, 5)},
			want: Result{Shares: []int32{0, 0, 0}, Unplaced: 20},
		},
		"all or nothing keeps what runs when a scale-up does not fit": {
			in:   Input{Total: 20, Min: 1, AllOrNothing: true, Clusters: running(clusters(4, 3, 5), 4, 3, 3)},
			want: Result{Shares: []int32{4, 3, 3}, Unplaced: 10},
		},
		"evenly": {
			in:   Input{Policy: v1alpha1.SplitEvenly, Total: 10, Min: 1, Clusters: clusters(9, 9, 9)},
			want: Result{Shares: []int32{4, 3, 3}},
		},
		"evenly, capped at the room, the rest to the others": {
			in:   Input{Policy: v1alpha1.SplitEvenly, Total: 10, Min: 1, Clusters: clusters(2, 9, 9)},
			want: Result{Shares: []int32{2, 4, 4}},
		},
		"evenly over no more clusters than the smallest share allows": {
			in:   Input{Policy: v1alpha1.SplitEvenly, Total: 10, Min: 4, Clusters: clusters(9, 9, 9)},
			want: Result{Shares: []int32{5, 5, 0}},
		},
		"evenly keeps the running shares of the same total": {
			in:   Input{Policy: v1alpha1.SplitEvenly, Total: 10, Min: 1, Clusters: running(clusters(9, 9, 9), 2, 4, 4)},
			want: Result{Shares: []int32{2, 4, 4}},
		},
		"by weights": {
			in: Input{Policy: v1alpha1.SplitByWeights, Total: 10, Min: 1, Clusters: []Cluster{
				{Name: "a", Capacity: 20, Weight: 3}, {Name: "b", Capacity: 20, Weight: 1}, {Name: "c", Capacity: 20, Weight: 0}}},
			want: Result{Shares: []int32{8, 2, 0}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Divide(tc.in)); diff != "" {
				t.Errorf("Divide (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDivideProperties checks random divisions against what must hold of any: the shares and
// the unplaced add up to the total, no share is below the smallest, no new replica goes
// beyond a cluster's room, the running shares are never cut unless the total shrank, and
// with a smallest share of 1 everything that fits is placed (the room of the clusters that
// may take part, counted by brute force).
func TestDivideProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	policies := []v1alpha1.SplitPolicy{v1alpha1.SplitByCapacity, v1alpha1.SplitEvenly, v1alpha1.SplitByWeights}
	for iter := range 20000 {
		in := Input{Policy: policies[r.IntN(3)], Total: int32(r.IntN(40)), Min: int32(1 + r.IntN(4)), AllOrNothing: r.IntN(5) == 0}
		if r.IntN(3) == 0 {
			in.Min = 1
		}
		runs := r.IntN(2) == 0
		for k := range r.IntN(6) {
			c := Cluster{Name: fmt.Sprint(k), Capacity: int32(r.IntN(12)), Weight: int32(r.IntN(4))}
			if runs && r.IntN(2) == 0 {
				c.Previous = in.Min + int32(r.IntN(5))
			}
			in.Clusters = append(in.Clusters, c)
		}
		got := Divide(in)
		where := fmt.Sprintf("case %d: %+v -> %+v", iter, in, got)
		if len(got.Shares) != len(in.Clusters) {
			t.Fatalf("%s: %d shares for %d clusters", where, len(got.Shares), len(in.Clusters))
		}
		var prev int32
		for _, c := range in.Clusters {
			prev += c.Previous
		}
		placed := sum(got.Shares)
		if placed+got.Unplaced != max(in.Total, prev) && placed+got.Unplaced != in.Total {
			t.Fatalf("%s: %d placed + %d unplaced != total %d", where, placed, got.Unplaced, in.Total)
		}
		if prev <= in.Total && placed > in.Total {
			t.Fatalf("%s: %d placed of %d", where, placed, in.Total)
		}
		for i, c := range in.Clusters {
			s := got.Shares[i]
			if s > 0 && s < in.Min && s != c.Previous {
				t.Fatalf("%s: share %d of %s below the smallest %d", where, s, c.Name, in.Min)
			}
			if s > max(c.Capacity, c.Previous) {
				t.Fatalf("%s: share %d of %s beyond its room %d (running %d)", where, s, c.Name, c.Capacity, c.Previous)
			}
			if in.Policy == v1alpha1.SplitByCapacity && prev <= in.Total && s < c.Previous {
				t.Fatalf("%s: running share %d of %s cut to %d while the total did not shrink", where, c.Previous, c.Name, s)
			}
		}
		if in.Min == 1 && !in.AllOrNothing && prev == 0 {
			var room int32
			for _, c := range in.Clusters {
				if in.Policy != v1alpha1.SplitByWeights || c.Weight > 0 {
					room += c.Capacity
				}
			}
			if want := max(in.Total-room, 0); got.Unplaced != want {
				t.Fatalf("%s: %d unplaced, but the clusters' room leaves %d", where, got.Unplaced, want)
			}
		}
	}
}
