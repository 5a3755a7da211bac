package inventory

import (
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Amount is how much of one resource there is, in thousandths of the
// resource's unit (millicores for cpu, millibytes for memory, milli-devices
// for extended resources), so that every amount Kubernetes accepts is an exact
// integer.
type Amount struct {
	Name  corev1.ResourceName
	Milli int64
}

// Vector is a set of resource amounts sorted by name, one entry per name and
// only positive amounts: a name that is absent means zero. Sorted slices keep
// the hot paths (adding a pod to a node, computing a node's free resources)
// free of map operations, and make vectors comparable with ==-style loops.
//
// Vectors are treated as values: operations return new vectors and never
// write to their operands, so a Vector may be shared freely once built. (The
// unexported addInPlace and subInPlace are the exception, for vectors that
// their owner never shares.)
type Vector []Amount

// maxUnits is the largest whole amount whose milli-value still fits in an
// int64. Larger amounts (more than about 8 PiB on one node) are clamped to it.
const maxUnits = math.MaxInt64 / 1000

// maxMilli is MaxInt64 thousandths as a Quantity: the largest amount MilliOf
// returns exactly.
var maxMilli = *resource.NewMilliQuantity(math.MaxInt64, resource.DecimalSI)

// minMilli is -MaxInt64 thousandths, the most negative amount pods are
// counted with before negative amounts become zero.
var minMilli = *resource.NewMilliQuantity(-math.MaxInt64, resource.DecimalSI)

// MilliOf returns q in thousandths, rounded up, and saturates: an amount
// below zero counts as 0 and one beyond MaxInt64 thousandths as MaxInt64.
// So the conversion is monotonic and a positive amount never becomes zero,
// whatever is written: a pod requesting cpu 1e19 fills its node rather than
// fitting everywhere, and a node reporting 1e19 allocatable is read as
// having the most fleetfit can count.
//
// Quantity.Value and Quantity.MilliValue cannot be used alone for this: for
// amounts beyond an int64 they return wrapped or zero values (1e19 gives 0),
// so the range is checked first, with CompareQuantities, which is exact for
// every quantity and quick even for 1e709551616.
func MilliOf(q resource.Quantity) int64 {
	if q.Sign() <= 0 {
		return 0
	}
	// Whole amounts, the common case, need no Cmp.
	if v, ok := q.AsInt64(); ok {
		if v > maxUnits {
			return math.MaxInt64
		}
		return v * 1000
	}
	if v1alpha1.CompareQuantities(q, maxMilli) >= 0 {
		return math.MaxInt64
	}
	return q.MilliValue()
}

// NewVector converts a ResourceList, dropping zero and negative amounts.
func NewVector(list corev1.ResourceList) Vector {
	return appendVector(make(Vector, 0, len(list)), list)
}

// appendVector appends NewVector(list) to v, which must be empty.
func appendVector(v Vector, list corev1.ResourceList) Vector {
	for name, q := range list {
		if m := MilliOf(q); m > 0 {
			v = append(v, Amount{Name: name, Milli: m})
		}
	}
	sortAmounts(v)
	return v
}

// sortAmounts sorts by name with an insertion sort: vectors hold a handful
// of resources, and this runs once per pod, where sort.Slice's allocation
// would dominate.
func sortAmounts(v Vector) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j].Name < v[j-1].Name; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

// Get returns the amount of name, zero when absent.
func (v Vector) Get(name corev1.ResourceName) int64 {
	i := sort.Search(len(v), func(i int) bool { return v[i].Name >= name })
	if i < len(v) && v[i].Name == name {
		return v[i].Milli
	}
	return 0
}

// Equal reports whether v and w hold the same amounts.
func (v Vector) Equal(w Vector) bool {
	if len(v) != len(w) {
		return false
	}
	for i := range v {
		if v[i] != w[i] {
			return false
		}
	}
	return true
}

// List converts v back to a ResourceList, each quantity in the format
// Kubernetes uses for that resource (binary suffixes for bytes).
func (v Vector) List() corev1.ResourceList {
	if len(v) == 0 {
		return nil
	}
	list := make(corev1.ResourceList, len(v))
	for _, a := range v {
		list[a.Name] = quantity(a.Name, a.Milli)
	}
	return list
}

// Add returns v + w. Sums saturate at MaxInt64 rather than wrap.
func (v Vector) Add(w Vector) Vector {
	return merge(v, w, func(a, b int64) int64 {
		if a > math.MaxInt64-b {
			return math.MaxInt64
		}
		return a + b
	})
}

// Sub returns v − w with every amount floored at zero (and then dropped).
func (v Vector) Sub(w Vector) Vector {
	return merge(v, w, func(a, b int64) int64 { return max(a-b, 0) })
}

// addInPlace returns v + w like Add, but reuses v's storage: v must be owned
// by the caller and not shared, since it is overwritten. It allocates only
// when w brings names v lacks and v has no room for them.
func (v Vector) addInPlace(w Vector) Vector {
	missing := 0
	i := 0
	for _, b := range w {
		for i < len(v) && v[i].Name < b.Name {
			i++
		}
		if i == len(v) || v[i].Name != b.Name {
			missing++
		}
	}
	if missing > 0 && len(v)+missing > cap(v) {
		return v.Add(w)
	}
	// Merge from the back so that nothing is overwritten before it is read.
	n := len(v)
	v = v[:n+missing]
	i, j, k := n-1, len(w)-1, n+missing-1
	for j >= 0 {
		switch {
		case i >= 0 && v[i].Name > w[j].Name:
			v[k] = v[i]
			i--
		case i >= 0 && v[i].Name == w[j].Name:
			a := v[i].Milli
			if a > math.MaxInt64-w[j].Milli {
				a = math.MaxInt64
			} else {
				a += w[j].Milli
			}
			v[k] = Amount{Name: v[i].Name, Milli: a}
			i--
			j--
		default:
			v[k] = w[j]
			j--
		}
		k--
	}
	return v
}

// subInPlace returns v − w like Sub, reusing v's storage; v must be owned by
// the caller and not shared.
func (v Vector) subInPlace(w Vector) Vector {
	i := 0
	for _, b := range w {
		for i < len(v) && v[i].Name < b.Name {
			i++
		}
		if i < len(v) && v[i].Name == b.Name {
			v[i].Milli = max(v[i].Milli-b.Milli, 0)
		}
	}
	out := v[:0]
	for _, a := range v {
		if a.Milli > 0 {
			out = append(out, a)
		}
	}
	return out
}

// merge applies op to the amounts of every name in v or w (absent = 0) and
// keeps the positive results.
func merge(v, w Vector, op func(a, b int64) int64) Vector {
	out := make(Vector, 0, max(len(v), len(w)))
	i, j := 0, 0
	for i < len(v) || j < len(w) {
		var a Amount
		switch {
		case j == len(w) || (i < len(v) && v[i].Name < w[j].Name):
			a = Amount{Name: v[i].Name, Milli: op(v[i].Milli, 0)}
			i++
		case i == len(v) || w[j].Name < v[i].Name:
			a = Amount{Name: w[j].Name, Milli: op(0, w[j].Milli)}
			j++
		default:
			a = Amount{Name: v[i].Name, Milli: op(v[i].Milli, w[j].Milli)}
			i++
			j++
		}
		if a.Milli > 0 {
			out = append(out, a)
		}
	}
	return out
}

// isBytes reports whether name is measured in bytes, which decides both the
// quantity format and the default rounding step.
func isBytes(name corev1.ResourceName) bool {
	return name == corev1.ResourceMemory || name == corev1.ResourceEphemeralStorage ||
		name == corev1.ResourceStorage || isHugePages(name)
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// quantity renders a milli-amount of name as Kubernetes would write it.
func quantity(name corev1.ResourceName, milli int64) resource.Quantity {
	format := resource.DecimalSI
	if isBytes(name) {
		format = resource.BinarySI
	}
	if milli%1000 == 0 {
		return *resource.NewQuantity(milli/1000, format)
	}
	return *resource.NewMilliQuantity(milli, format)
}

// sum adds milli-amounts over many nodes without overflowing: 5,000 nodes of
// 2 TiB of memory already exceed an int64 of millibytes. Whole units and the
// milli remainder are kept apart; both stay far from overflow, and the sum
// stays exact under subtraction because it is linear.
type sum struct{ units, milli int64 }

func (s *sum) add(m int64) { s.units += m / 1000; s.milli += m % 1000 }
func (s *sum) sub(m int64) { s.units -= m / 1000; s.milli -= m % 1000 }

func (s sum) isZero() bool { return s.units == 0 && s.milli == 0 }

func (s sum) quantity(name corev1.ResourceName) resource.Quantity {
	if s.units < maxUnits-1 && s.units > -maxUnits+1 {
		return quantity(name, s.units*1000+s.milli)
	}
	q := quantity(name, 0)
	q.Add(*resource.NewScaledQuantity(s.units, 0))
	q.Add(*resource.NewMilliQuantity(s.milli, resource.DecimalSI))
	return q
}

// freeQuantity renders a cluster's free amount of name. A free amount of
// bytes is rounded down to the largest binary unit (Ki, Mi, Gi, ...) of which
// it holds at least 100, so that it is written as 210Gi rather than as the
// 226130518016 that a sum of decimal pod requests leaves (a canonical binary
// quantity not divisible by 1Ki is written in bytes), and kubectl's printer
// columns read well. It is then at most 1% below the sum, never above it.
func (s sum) freeQuantity(name corev1.ResourceName) resource.Quantity {
	const minUnits, ki = 100, 1024
	if !isBytes(name) || s.units < minUnits*ki || s.units >= maxUnits-1 {
		return s.quantity(name)
	}
	// The milli remainder of many nodes may reach whole bytes either way.
	bytes := s.units + s.milli/1000
	if s.milli < 0 && s.milli%1000 != 0 {
		bytes--
	}
	unit := int64(ki)
	for unit < 1<<60 && bytes/(unit*ki) >= minUnits {
		unit *= ki
	}
	return *resource.NewQuantity(bytes/unit*unit, resource.BinarySI)
}
