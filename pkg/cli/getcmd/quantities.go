package getcmd

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Amount prints a quantity of a resource as the tables do (fleetfit ui too). See amount.
func Amount(name corev1.ResourceName, q resource.Quantity) string { return amount(name, q) }

// amount prints a quantity of a resource for a table: cores with at most one decimal, bytes
// in binary units with at most one decimal, anything else as a count. An amount those forms
// cannot hold in an int64 (cpu 1e19, memory 1e308) is printed as Kubernetes writes it,
// since Quantity.Value and MilliValue would wrap it to a wrong, even negative, number.
func amount(name corev1.ResourceName, q resource.Quantity) string {
	switch {
	case name == corev1.ResourceCPU:
		if !fitsInt64(q, math.MaxInt64/1000) {
			return q.String()
		}
		return trim(float64(q.MilliValue()) / 1000)
	case !fitsInt64(q, math.MaxInt64-1):
		return q.String()
	case name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return bytes(q.Value())
	default:
		return strconv.FormatInt(q.Value(), 10)
	}
}

// fitsInt64 reports whether q lies strictly between -bound and bound, where Value and
// MilliValue (for bound MaxInt64/1000) are exact or rounded up by less than one. It compares
// with CompareQuantities, since Quantity.CmpInt64 takes minutes for an amount like 1e709551616.
func fitsInt64(q resource.Quantity, bound int64) bool {
	return v1alpha1.CompareQuantities(q, *resource.NewQuantity(bound, resource.DecimalSI)) < 0 &&
		v1alpha1.CompareQuantities(q, *resource.NewQuantity(-bound, resource.DecimalSI)) > 0
}

func bytes(b int64) string {
	units := []string{"", "Ki", "Mi", "Gi", "Ti", "Pi"}
	v, i := float64(b), 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return trim(v) + units[i]
}

// trim prints v with one decimal, without a trailing ".0", rounding down so a table never
// shows more than there is.
func trim(v float64) string {
	s := fmt.Sprintf("%.1f", float64(int64(v*10))/10)
	return strings.TrimSuffix(s, ".0")
}
