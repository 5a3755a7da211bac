package v1alpha1

import (
	"cmp"
	"fmt"
	"math"
	"strconv"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// EffectiveRequests is the amount the pod is guaranteed and that must be free
// on one node, as a Kubernetes quantity: requests, or limits when only limits
// are set (Kubernetes defaults requests to limits), converted from the legacy
// units when units is set. It returns an error when neither requests nor
// limits is set, when units is unknown, or when units is set and the amount is
// not a whole non-negative number: EMCO's legacy form scales whole numbers of
// a unit only. An amount that passes validation never returns an error.
func (r *ResourceAmount) EffectiveRequests() (resource.Quantity, error) {
	switch {
	case r.Requests != nil:
		return r.inKubernetesUnits("requests", *r.Requests)
	case r.Limits != nil:
		return r.inKubernetesUnits("limits", *r.Limits)
	default:
		return resource.Quantity{}, fmt.Errorf("resource %q sets neither requests nor limits", r.Name)
	}
}

// EffectiveLimits is limits as a Kubernetes quantity, converted from the
// legacy units when units is set, or nil when no limits are set. It fails for
// the same reasons as EffectiveRequests.
func (r *ResourceAmount) EffectiveLimits() (*resource.Quantity, error) {
	if r.Limits == nil {
		return nil, nil
	}
	q, err := r.inKubernetesUnits("limits", *r.Limits)
	if err != nil {
		return nil, err
	}
	return &q, nil
}

// inKubernetesUnits returns q scaled by the legacy units, or a copy of q when
// there are none. field names the amount in errors.
func (r *ResourceAmount) inKubernetesUnits(field string, q resource.Quantity) (resource.Quantity, error) {
	if r.Units == "" {
		return q.DeepCopy(), nil
	}
	// An amount too large is refused first: spelling out one such as
	// 1e709551616 in digits would take gigabytes. Validation refuses it too,
	// with the field's path.
	most, known := MaxAmountIn(r.Units)
	if CompareQuantities(q, *resource.NewQuantity(max(most, MaxAmount), resource.DecimalSI)) > 0 ||
		(known && CompareQuantities(q, *resource.NewQuantity(most, resource.DecimalSI)) > 0) {
		if !known {
			return resource.Quantity{}, errUnknownUnits(r.Units)
		}
		return resource.Quantity{}, fmt.Errorf("%s %s is more than %d, the most of units %s fleetfit can count", field, q.String(), most, r.Units)
	}
	// Wholeness is checked before the unit is looked up so that a fractional
	// amount is reported as such whatever the units say.
	digits, ok := wholeDigits(q)
	if !ok {
		return resource.Quantity{}, fmt.Errorf("%s %s is not a whole non-negative number of units %s", field, q.String(), r.Units)
	}
	suffix, ok := legacyUnitSuffix(r.Units)
	if !ok {
		return resource.Quantity{}, errUnknownUnits(r.Units)
	}

	converted, err := resource.ParseQuantity(digits + suffix)
	if err != nil {
		return resource.Quantity{}, fmt.Errorf("converting %s %s with units %s: %w", field, q.String(), r.Units, err)
	}
	return converted, nil
}

// MaxAmount is the largest amount of a resource an HPAIntent may ask for, in
// the resource's own unit (cores, bytes, devices): the largest whole amount
// whose thousandths fit an int64, which is how fleetfit counts amounts when
// it fits them on nodes. That is about 8 PiB of memory and far beyond any
// node, so it refuses only amounts that are mistakes, and it keeps every
// amount the API accepts exact instead of clamped.
const MaxAmount int64 = math.MaxInt64 / 1000

// MaxAmountIn returns the largest whole number of one of EMCO's legacy units
// that converts to at most MaxAmount, e.g. 8388 for TiB, and false for units
// that are not known.
func MaxAmountIn(units string) (int64, bool) {
	suffix, ok := legacyUnitSuffix(units)
	if !ok {
		return 0, false
	}
	unit := resource.MustParse("1" + suffix)
	return MaxAmount / unit.Value(), true
}

func errUnknownUnits(units string) error {
	return fmt.Errorf("unknown units %q: use one of K, M, G, T, Ki, Mi, Gi, Ti, KB, MB, GB, TB, KiB, MiB, GiB, TiB, or none", units)
}

// legacyUnitSuffix maps one of EMCO's units to the Kubernetes quantity suffix
// with the same multiplier. The byte-suffixed forms (MB, MiB) mean the same
// as the bare ones; K is decimal, spelt k in Kubernetes.
func legacyUnitSuffix(units string) (string, bool) {
	switch units {
	case "K", "KB":
		return "k", true
	case "M", "MB":
		return "M", true
	case "G", "GB":
		return "G", true
	case "T", "TB":
		return "T", true
	case "Ki", "KiB":
		return "Ki", true
	case "Mi", "MiB":
		return "Mi", true
	case "Gi", "GiB":
		return "Gi", true
	case "Ti", "TiB":
		return "Ti", true
	default:
		return "", false
	}
}

// wholeDigits returns q as a string of decimal digits when it is a whole,
// non-negative number. It works on the value, not on how it was written:
// 1000, 1k and 1e3 all give "1000", because a decoded Quantity no longer
// knows its original spelling.
func wholeDigits(q resource.Quantity) (string, bool) {
	if q.Sign() < 0 {
		return "", false
	}
	if v, ok := q.AsInt64(); ok {
		return strconv.FormatInt(v, 10), true
	}
	// AsInt64 also refuses values beyond int64 and whole values stored with
	// a negative scale (2000m), so fall back to exact decimal arithmetic.
	d := q.AsDec()
	whole := new(inf.Dec).Round(d, 0, inf.RoundDown)
	if whole.Cmp(d) != 0 {
		return "", false
	}
	return whole.String(), true
}

// CompareQuantities returns -1, 0 or 1 as a is less than, equal to or greater
// than b, like a.Cmp(b), in time that depends on the digits written and not
// on the exponents. ParseQuantity accepts an amount such as 1e709551616, and
// Quantity.Cmp of it with 1 aligns the two, building a number of 709551616
// digits, which takes minutes and gigabytes. Amounts whose orders of
// magnitude differ by more than one are ordered from the orders alone; for
// the others the exponents are close enough for Cmp.
func CompareQuantities(a, b resource.Quantity) int {
	sa, sb := a.Sign(), b.Sign()
	if sa != sb || sa == 0 {
		return cmp.Compare(sa, sb)
	}
	loA, hiA := log10Bounds(a)
	loB, hiB := log10Bounds(b)
	switch {
	case hiA+1 < loB: // |a| < |b|
		return -sa
	case hiB+1 < loA: // |a| > |b|
		return sa
	}
	return a.Cmp(b)
}

// log10Bounds returns lo and hi with lo ≤ log10|q| < hi for a non-zero q,
// read from its representation as unscaled·10^-scale without arithmetic on
// its digits: the unscaled value has b bits, so it lies in [2^(b-1), 2^b).
func log10Bounds(q resource.Quantity) (lo, hi float64) {
	// q is a copy: AsDec may convert it, never the caller's quantity.
	d := q.AsDec()
	bits := float64(d.UnscaledBig().BitLen())
	scale := float64(d.Scale())
	return (bits-1)*math.Log10(2) - scale, bits*math.Log10(2) - scale
}
