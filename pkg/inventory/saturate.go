package inventory

import "math"

// The helpers below count things that cannot be negative — nodes, devices,
// thousandths — and saturate instead of wrapping, so that a count that
// overflows reads as the most there can be, never as a small or negative
// number. Negative inputs, which only a malformed report can hold, count as
// zero.

// addCounts returns a+b, saturating at MaxInt64.
func addCounts(a, b int64) int64 {
	a, b = max(a, 0), max(b, 0)
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// mulCounts returns a·b, saturating at MaxInt64.
func mulCounts(a, b int64) int64 {
	a, b = max(a, 0), max(b, 0)
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// int32Count returns n as an int32, saturating at MaxInt32, for the counts
// the API holds in int32 fields.
func int32Count[T int | int64](n T) int32 {
	switch {
	case n < 0:
		return 0
	case int64(n) > math.MaxInt32:
		return math.MaxInt32
	}
	return int32(n)
}

// unitsOf returns a milli-amount from MilliOf in whole units, rounded up as
// Quantity.Value rounds (half a GPU counts as one).
func unitsOf(m int64) int64 {
	units := m / 1000
	if m%1000 != 0 {
		units++
	}
	return units
}
