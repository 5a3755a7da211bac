package get

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// amount prints a quantity of a resource for a table: cores with at most one decimal, bytes
// in binary units with at most one decimal, anything else as a count.
func amount(name corev1.ResourceName, q resource.Quantity) string {
	switch {
	case name == corev1.ResourceCPU:
		return trim(float64(q.MilliValue()) / 1000)
	case name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return bytes(q.Value())
	default:
		return strconv.FormatInt(q.Value(), 10)
	}
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
