package v1alpha1

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestEffectiveAmounts(t *testing.T) {
	// effective is what EffectiveRequests and EffectiveLimits return; cmp
	// compares quantities by value through Quantity.Equal, so 1000M and 1G
	// are the same amount.
	type effective struct {
		Requests    resource.Quantity
		Limits      *resource.Quantity
		RequestsErr string
		LimitsErr   string
	}
	q := resource.MustParse
	qp := func(s string) *resource.Quantity { return ptr.To(q(s)) }

	cases := map[string]struct {
		amount ResourceAmount
		want   effective
	}{
		"Kubernetes quantities pass through": {
			amount: ResourceAmount{Name: "cpu", Requests: qp("500m"), Limits: qp("2")},
			want:   effective{Requests: q("500m"), Limits: qp("2")},
		},
		"no limits": {
			amount: ResourceAmount{Name: "memory", Requests: qp("2Gi")},
			want:   effective{Requests: q("2Gi")},
		},
		"limits only: requests default to limits": {
			amount: ResourceAmount{Name: "nvidia.com/gpu", Limits: qp("1")},
			want:   effective{Requests: q("1"), Limits: qp("1")},
		},
		"limits only in legacy units": {
			amount: ResourceAmount{Name: "memory", Limits: qp("2"), Units: "GiB"},
			want:   effective{Requests: q("2Gi"), Limits: qp("2Gi")},
		},
		"fwall memory: 1000 MB": {
			amount: ResourceAmount{Name: "memory", Requests: qp("1000"), Limits: qp("1000"), Units: "MB"},
			want:   effective{Requests: q("1000M"), Limits: qp("1000M")},
		},
		"api-server memory: 200 MB requests only": {
			amount: ResourceAmount{Name: "memory", Requests: qp("200"), Units: "MB"},
			want:   effective{Requests: q("200M")},
		},
		"K is decimal":             {amount: ResourceAmount{Requests: qp("3"), Units: "K"}, want: effective{Requests: q("3000")}},
		"M is decimal":             {amount: ResourceAmount{Requests: qp("3"), Units: "M"}, want: effective{Requests: q("3000000")}},
		"G is decimal":             {amount: ResourceAmount{Requests: qp("3"), Units: "G"}, want: effective{Requests: q("3e9")}},
		"T is decimal":             {amount: ResourceAmount{Requests: qp("3"), Units: "T"}, want: effective{Requests: q("3e12")}},
		"KB is decimal":            {amount: ResourceAmount{Requests: qp("3"), Units: "KB"}, want: effective{Requests: q("3000")}},
		"MB is decimal":            {amount: ResourceAmount{Requests: qp("3"), Units: "MB"}, want: effective{Requests: q("3000000")}},
		"GB is decimal":            {amount: ResourceAmount{Requests: qp("3"), Units: "GB"}, want: effective{Requests: q("3e9")}},
		"TB is decimal":            {amount: ResourceAmount{Requests: qp("3"), Units: "TB"}, want: effective{Requests: q("3e12")}},
		"Ki is binary":             {amount: ResourceAmount{Requests: qp("3"), Units: "Ki"}, want: effective{Requests: q("3072")}},
		"Mi is binary":             {amount: ResourceAmount{Requests: qp("3"), Units: "Mi"}, want: effective{Requests: q("3145728")}},
		"Gi is binary":             {amount: ResourceAmount{Requests: qp("3"), Units: "Gi"}, want: effective{Requests: q("3221225472")}},
		"Ti is binary":             {amount: ResourceAmount{Requests: qp("3"), Units: "Ti"}, want: effective{Requests: q("3298534883328")}},
		"KiB is binary":            {amount: ResourceAmount{Requests: qp("3"), Units: "KiB"}, want: effective{Requests: q("3072")}},
		"MiB is binary":            {amount: ResourceAmount{Requests: qp("3"), Units: "MiB"}, want: effective{Requests: q("3145728")}},
		"GiB is binary":            {amount: ResourceAmount{Requests: qp("3"), Units: "GiB"}, want: effective{Requests: q("3221225472")}},
		"TiB is binary":            {amount: ResourceAmount{Requests: qp("3"), Units: "TiB"}, want: effective{Requests: q("3298534883328")}},
		"zero in legacy units":     {amount: ResourceAmount{Requests: qp("0"), Units: "MB"}, want: effective{Requests: q("0")}},
		"1k is a whole number":     {amount: ResourceAmount{Requests: qp("1k"), Units: "MB"}, want: effective{Requests: q("1G")}},
		"2000m is a whole number":  {amount: ResourceAmount{Requests: qp("2000m"), Units: "Gi"}, want: effective{Requests: q("2Gi")}},
		"the most of legacy units": {amount: ResourceAmount{Requests: qp("9223372036854"), Units: "K"}, want: effective{Requests: q("9223372036854k")}},
		"beyond the most of legacy units": {
			amount: ResourceAmount{Requests: qp("20E"), Units: "K"},
			want:   effective{RequestsErr: "requests 20E is more than 9223372036854, the most of units K fleetfit can count"},
		},
		"1e709551616 in legacy units, quickly": {
			amount: ResourceAmount{Limits: qp("1e709551616"), Units: "TiB"},
			want: effective{
				RequestsErr: "limits 10e709551615 is more than 8388, the most of units TiB fleetfit can count",
				LimitsErr:   "limits 10e709551615 is more than 8388, the most of units TiB fleetfit can count",
			},
		},
		"1e709551616 in unknown units": {
			amount: ResourceAmount{Requests: qp("1e709551616"), Units: "PB"},
			want: effective{
				RequestsErr: `unknown units "PB": use one of K, M, G, T, Ki, Mi, Gi, Ti, KB, MB, GB, TB, KiB, MiB, GiB, TiB, or none`,
			},
		},
		"part of a unit": {
			amount: ResourceAmount{Requests: qp("1.5"), Limits: qp("2"), Units: "MB"},
			want: effective{
				Limits:      qp("2M"),
				RequestsErr: "requests 1500m is not a whole non-negative number of units MB",
			},
		},
		"part of a unit in limits only": {
			amount: ResourceAmount{Limits: qp("0.5"), Units: "Gi"},
			want: effective{
				RequestsErr: "limits 500m is not a whole non-negative number of units Gi",
				LimitsErr:   "limits 500m is not a whole non-negative number of units Gi",
			},
		},
		"negative in legacy units": {
			amount: ResourceAmount{Requests: qp("-5"), Units: "MB"},
			want:   effective{RequestsErr: "requests -5 is not a whole non-negative number of units MB"},
		},
		"negative without units passes through": {
			amount: ResourceAmount{Requests: qp("-5")},
			want:   effective{Requests: q("-5")},
		},
		"unknown units": {
			amount: ResourceAmount{Requests: qp("5"), Units: "PB"},
			want: effective{
				RequestsErr: `unknown units "PB": use one of K, M, G, T, Ki, Mi, Gi, Ti, KB, MB, GB, TB, KiB, MiB, GiB, TiB, or none`,
			},
		},
		"neither requests nor limits": {
			amount: ResourceAmount{Name: "cpu"},
			want:   effective{RequestsErr: `resource "cpu" sets neither requests nor limits`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.amount.DeepCopy()
			var got effective
			var err error
			if got.Requests, err = tc.amount.EffectiveRequests(); err != nil {
				got.RequestsErr = err.Error()
			}
			if got.Limits, err = tc.amount.EffectiveLimits(); err != nil {
				got.LimitsErr = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Effective amounts (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before, &tc.amount); diff != "" {
				t.Errorf("The amount changed (-before,+after):\n%s", diff)
			}
		})
	}
}

// TestEffectiveRequestsIsACopy checks that changing the result leaves the
// intent alone, since callers add amounts up in place. The amount has more
// digits than an int64 holds, so the quantity keeps a pointer that a shallow
// copy would share.
func TestEffectiveRequestsIsACopy(t *testing.T) {
	amount := ResourceAmount{Name: "ephemeral-storage", Requests: ptr.To(resource.MustParse("123456789012345678901"))}
	got, err := amount.EffectiveRequests()
	if err != nil {
		t.Fatalf("EffectiveRequests() failed: %v", err)
	}
	got.Add(resource.MustParse("1"))
	if diff := cmp.Diff(resource.MustParse("123456789012345678901"), *amount.Requests); diff != "" {
		t.Errorf("Requests after adding to the result (-want,+got):\n%s", diff)
	}
}

func TestMaxAmountIn(t *testing.T) {
	got := map[string]int64{}
	for _, units := range []string{"K", "KB", "M", "MB", "G", "GB", "T", "TB", "Ki", "KiB", "Mi", "MiB", "Gi", "GiB", "Ti", "TiB", "PB", ""} {
		if m, ok := MaxAmountIn(units); ok {
			got[units] = m
		}
	}
	want := map[string]int64{
		"K": 9223372036854, "KB": 9223372036854, "M": 9223372036, "MB": 9223372036,
		"G": 9223372, "GB": 9223372, "T": 9223, "TB": 9223,
		"Ki": 9007199254740, "KiB": 9007199254740, "Mi": 8796093022, "MiB": 8796093022,
		"Gi": 8589934, "GiB": 8589934, "Ti": 8388, "TiB": 8388,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MaxAmountIn (-want,+got):\n%s", diff)
	}
	// The largest number of each unit converts to at most MaxAmount; one
	// more would be beyond it, and is refused.
	most := *resource.NewQuantity(MaxAmount, resource.DecimalSI)
	for units, m := range want {
		a := ResourceAmount{Requests: resource.NewQuantity(m, resource.DecimalSI), Units: units}
		q, err := a.EffectiveRequests()
		if err != nil {
			t.Fatalf("%d %s: %v", m, units, err)
		}
		if q.Cmp(most) > 0 {
			t.Errorf("%d %s converts to %s, beyond MaxAmount", m, units, q.String())
		}
		suffix, _ := legacyUnitSuffix(units)
		if next := resource.MustParse(strconv.FormatInt(m+1, 10) + suffix); next.Cmp(most) <= 0 {
			t.Errorf("%d %s is %s, within MaxAmount: the maximum is too small", m+1, units, next.String())
		}
		a.Requests = resource.NewQuantity(m+1, resource.DecimalSI)
		wantErr := fmt.Sprintf("requests %d is more than %d, the most of units %s fleetfit can count", m+1, m, units)
		if _, err := a.EffectiveRequests(); err == nil || err.Error() != wantErr {
			t.Errorf("%d %s: EffectiveRequests error %v, want %q", m+1, units, err, wantErr)
		}
	}
}

// TestCompareQuantities compares amounts whose exponents are far apart,
// which Quantity.Cmp takes minutes over; a regression shows as a test that
// times out.
func TestCompareQuantities(t *testing.T) {
	cases := map[string]struct {
		a, b string
		want int
	}{
		"equal, written differently":   {a: "1k", b: "1000", want: 0},
		"less":                         {a: "999m", b: "1", want: -1},
		"greater":                      {a: "2Gi", b: "2G", want: 1},
		"zero and negative":            {a: "0", b: "-1n", want: 1},
		"huge exponent against one":    {a: "1844674407E709551616", b: "1", want: 1},
		"one against a huge exponent":  {a: "1", b: "1e709551616", want: -1},
		"two huge exponents":           {a: "1e709551616", b: "1e709551615", want: 1},
		"the same huge exponent":       {a: "2e709551616", b: "20e709551615", want: 0},
		"negative huge exponent":       {a: "-1e709551616", b: "-1", want: -1},
		"huge against MaxInt64 milli":  {a: "1e19", b: "9223372036854775807m", want: 1},
		"just under MaxInt64 milli":    {a: "9223372036854775.806", b: "9223372036854775807m", want: -1},
		"many digits, close in value":  {a: "1.000000001", b: "1000000001n", want: 0},
		"nano against a huge exponent": {a: "1n", b: "1e709551616", want: -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := CompareQuantities(resource.MustParse(tc.a), resource.MustParse(tc.b))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CompareQuantities(%s, %s) (-want,+got):\n%s", tc.a, tc.b, diff)
			}
			if back := CompareQuantities(resource.MustParse(tc.b), resource.MustParse(tc.a)); back != -tc.want {
				t.Errorf("CompareQuantities(%s, %s) = %d, want %d", tc.b, tc.a, back, -tc.want)
			}
		})
	}
}
