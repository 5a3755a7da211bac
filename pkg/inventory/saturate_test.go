package inventory

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSaturatingCounts(t *testing.T) {
	type results struct{ Add, Mul int64 }
	cases := map[string]struct {
		a, b int64
		want results
	}{
		"small":                        {a: 3, b: 4, want: results{Add: 7, Mul: 12}},
		"zero":                         {a: 0, b: math.MaxInt64, want: results{Add: math.MaxInt64, Mul: 0}},
		"sum beyond int64 saturates":   {a: math.MaxInt64, b: 1, want: results{Add: math.MaxInt64, Mul: math.MaxInt64}},
		"product beyond int64":         {a: 1 << 32, b: 1 << 32, want: results{Add: 1 << 33, Mul: math.MaxInt64}},
		"largest product that fits":    {a: math.MaxInt64 / 2, b: 2, want: results{Add: math.MaxInt64/2 + 2, Mul: math.MaxInt64 - 1}},
		"negative counts as zero":      {a: -5, b: 7, want: results{Add: 7, Mul: 0}},
		"two negatives are still zero": {a: math.MinInt64, b: math.MinInt64, want: results{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := results{Add: addCounts(tc.a, tc.b), Mul: mulCounts(tc.a, tc.b)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestInt32Count(t *testing.T) {
	cases := map[string]struct {
		n    int64
		want int32
	}{
		"small":                   {n: 5000, want: 5000},
		"MaxInt32":                {n: math.MaxInt32, want: math.MaxInt32},
		"2^32+1 saturates, not 1": {n: 1<<32 + 1, want: math.MaxInt32},
		"2^32 saturates, not 0":   {n: 1 << 32, want: math.MaxInt32},
		"negative is zero":        {n: -1, want: 0},
		"MaxInt64":                {n: math.MaxInt64, want: math.MaxInt32},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, int32Count(tc.n)); diff != "" {
				t.Errorf("int32Count(%d) (-want,+got):\n%s", tc.n, diff)
			}
			if diff := cmp.Diff(tc.want, int32Count(int(tc.n))); diff != "" {
				t.Errorf("int32Count(int(%d)) (-want,+got):\n%s", tc.n, diff)
			}
		})
	}
}
