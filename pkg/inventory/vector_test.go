package inventory

import (
	"math"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

func TestMilliOf(t *testing.T) {
	cases := map[string]struct {
		quantity string
		want     int64
	}{
		"whole":       {quantity: "8", want: 8000},
		"thousandths": {quantity: "500m", want: 500},
		"a fraction of a thousandth rounds up, never to zero": {quantity: "1n", want: 1},
		"binary suffix":                   {quantity: "2Gi", want: 2 * 1024 * 1024 * 1024 * 1000},
		"zero":                            {quantity: "0", want: 0},
		"negative counts as zero":         {quantity: "-1", want: 0},
		"negative beyond int64 is zero":   {quantity: "-1e19", want: 0},
		"largest whole amount kept exact": {quantity: "9223372036854775", want: 9223372036854775000},
		"largest amount kept exact":       {quantity: "9223372036854775.806", want: math.MaxInt64 - 1},
		"exactly MaxInt64 thousandths":    {quantity: "9223372036854775807m", want: math.MaxInt64},
		"one more whole unit saturates":   {quantity: "9223372036854776", want: math.MaxInt64},
		// Value() of the next three is MaxInt64, MinInt64 and 0:
		// MilliValue() wraps for all of them.
		"MaxInt64 units":         {quantity: "9223372036854775807", want: math.MaxInt64},
		"MaxInt64+1 units":       {quantity: "9223372036854775808", want: math.MaxInt64},
		"1e19":                   {quantity: "1e19", want: math.MaxInt64},
		"1e308":                  {quantity: "1e308", want: math.MaxInt64},
		"1Ei":                    {quantity: "1Ei", want: math.MaxInt64},
		"twenty nines":           {quantity: "99999999999999999999", want: math.MaxInt64},
		"2^64, which wraps to 0": {quantity: "18446744073709551616", want: math.MaxInt64},
		// Quantity.Cmp of these with MaxInt64 thousandths takes minutes.
		"an exponent of 709551616":         {quantity: "1844674407E709551616", want: math.MaxInt64},
		"a negative exponent of 709551616": {quantity: "-1e709551616", want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, MilliOf(resource.MustParse(tc.quantity))); diff != "" {
				t.Errorf("MilliOf(%s) (-want,+got):\n%s", tc.quantity, diff)
			}
		})
	}
}

// hugeExponent matches the exponents resource.ParseQuantity itself takes
// minutes over: negative ones of seven digits or more (1e-709551616) and
// any of ten digits or more, which may not fit an int32 (1e70955161706).
var hugeExponent = regexp.MustCompile(`[eE](-[0-9]{7}|[+]?[0-9]{10})`)

// FuzzMilliOf checks, for any two quantities, that MilliOf never panics,
// keeps every positive amount positive, counts nothing below zero, and is
// monotonic: a larger amount never converts to less than a smaller one.
func FuzzMilliOf(f *testing.F) {
	for _, pair := range [][2]string{
		{"1", "2"}, {"500m", "1"}, {"1n", "0"}, {"-1", "1"},
		{"9223372036854775", "9223372036854776"},
		{"9223372036854775807m", "9223372036854775808m"},
		{"1e19", "1"}, {"1e308", "8Ei"}, {"99999999999999999999", "9223372036854775807"},
		{"1Ei", "1Pi"}, {"2Gi", "2G"},
	} {
		f.Add(pair[0], pair[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if hugeExponent.MatchString(a) || hugeExponent.MatchString(b) {
			// Nothing to learn about MilliOf, which would not see them.
			t.Skip("an exponent ParseQuantity takes minutes over")
		}
		qa, errA := resource.ParseQuantity(a)
		qb, errB := resource.ParseQuantity(b)
		if errA != nil || errB != nil {
			t.Skip("not quantities")
		}
		ma, mb := MilliOf(qa), MilliOf(qb)
		for _, c := range []struct {
			q resource.Quantity
			m int64
		}{{qa, ma}, {qb, mb}} {
			if c.q.Sign() > 0 && c.m <= 0 {
				t.Errorf("MilliOf(%s) = %d: a positive amount must stay positive", c.q.String(), c.m)
			}
			if c.q.Sign() <= 0 && c.m != 0 {
				t.Errorf("MilliOf(%s) = %d, want 0 for an amount not above zero", c.q.String(), c.m)
			}
		}
		switch v1alpha1.CompareQuantities(qa, qb) {
		case -1:
			if ma > mb {
				t.Errorf("MilliOf(%s) = %d > MilliOf(%s) = %d: not monotonic", qa.String(), ma, qb.String(), mb)
			}
		case 1:
			if ma < mb {
				t.Errorf("MilliOf(%s) = %d < MilliOf(%s) = %d: not monotonic", qa.String(), ma, qb.String(), mb)
			}
		default:
			if ma != mb {
				t.Errorf("MilliOf(%s) = %d but MilliOf(%s) = %d for the same amount", qa.String(), ma, qb.String(), mb)
			}
		}
	})
}
