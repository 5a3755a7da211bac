package inventory

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"
)

// Selector says which nodes a request may use: nodes whose feature labels
// meet every feature requirement and whose NoSchedule and NoExecute taints
// are all tolerated. It is compiled once and then read-only, so one Selector
// may be evaluated against many clusters concurrently. A nil *Selector
// accepts every node.
type Selector struct {
	features    []requirement
	tolerations []corev1.Toleration
	text        string
}

// requirement is one compiled NodeSelectorRequirement.
type requirement struct {
	key    string
	op     corev1.NodeSelectorOperator
	values []string
	bound  int64 // for Gt and Lt
}

// NewSelector compiles feature requirements, ANDed as in one node selector
// term, and tolerations. It rejects what Kubernetes rejects in a node
// affinity term: an invalid key, In/NotIn without values, Exists/DoesNotExist
// with values, Gt/Lt without exactly one integer value, invalid label values,
// or an unknown operator.
func NewSelector(features []corev1.NodeSelectorRequirement, tolerations []corev1.Toleration) (*Selector, error) {
	s := &Selector{tolerations: slices.Clone(tolerations)}
	var errs []error
	var parts []string
	for i, f := range features {
		r, err := compileRequirement(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("features[%d]: %w", i, err))
			continue
		}
		s.features = append(s.features, r)
		parts = append(parts, r.String())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.text = strings.Join(parts, ", ")
	return s, nil
}

func compileRequirement(f corev1.NodeSelectorRequirement) (requirement, error) {
	r := requirement{key: f.Key, op: f.Operator, values: slices.Clone(f.Values)}
	if msgs := validation.IsQualifiedName(f.Key); len(msgs) > 0 {
		return r, fmt.Errorf("invalid key %q: %s", f.Key, strings.Join(msgs, "; "))
	}
	switch f.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(f.Values) == 0 {
			return r, fmt.Errorf("%s %s needs at least one value", f.Key, f.Operator)
		}
		for _, v := range f.Values {
			if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
				return r, fmt.Errorf("invalid value %q for %s: %s", v, f.Key, strings.Join(msgs, "; "))
			}
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(f.Values) > 0 {
			return r, fmt.Errorf("%s %s takes no values", f.Key, f.Operator)
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(f.Values) != 1 {
			return r, fmt.Errorf("%s %s needs exactly one value", f.Key, f.Operator)
		}
		n, err := strconv.ParseInt(f.Values[0], 10, 64)
		if errors.Is(err, strconv.ErrRange) {
			return r, fmt.Errorf("%s %s compares 64-bit integers, from %d to %d, as node affinity does; %s is out of range",
				f.Key, f.Operator, math.MinInt64, math.MaxInt64, f.Values[0])
		}
		if err != nil {
			return r, fmt.Errorf("%s %s needs an integer, got %q", f.Key, f.Operator, f.Values[0])
		}
		r.bound = n
	default:
		return r, fmt.Errorf("unknown operator %q", f.Operator)
	}
	return r, nil
}

// matches follows node affinity: a missing label fails In, Exists, Gt and Lt
// and passes NotIn and DoesNotExist; Gt and Lt compare labels that parse as
// base-10 int64 and fail on any other value.
func (r requirement) matches(labels map[string]string) bool {
	v, ok := labels[r.key]
	switch r.op {
	case corev1.NodeSelectorOpIn:
		return ok && slices.Contains(r.values, v)
	case corev1.NodeSelectorOpNotIn:
		return !ok || !slices.Contains(r.values, v)
	case corev1.NodeSelectorOpExists:
		return ok
	case corev1.NodeSelectorOpDoesNotExist:
		return !ok
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !ok {
			return false
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return false
		}
		if r.op == corev1.NodeSelectorOpGt {
			return n > r.bound
		}
		return n < r.bound
	}
	return false
}

// String renders the requirement as people read it in messages, e.g.
// "nvidia.com/gpu.product In [A100 H100]" or "example.com/cores Gt 8".
func (r requirement) String() string {
	switch r.op {
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		return r.key + " " + string(r.op)
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		return r.key + " " + string(r.op) + " " + r.values[0]
	}
	return r.key + " " + string(r.op) + " [" + strings.Join(r.values, " ") + "]"
}

// String renders the feature requirements, empty when there are none.
func (s *Selector) String() string {
	if s == nil {
		return ""
	}
	return s.text
}

// matchesLabels reports whether labels meet every feature requirement.
func (s *Selector) matchesLabels(labels map[string]string) bool {
	if s == nil {
		return true
	}
	for _, r := range s.features {
		if !r.matches(labels) {
			return false
		}
	}
	return true
}

// untolerated returns the first NoSchedule or NoExecute taint that no
// toleration tolerates; PreferNoSchedule taints never exclude a node.
// Toleration matching is Kubernetes' own, with the alpha Gt/Lt toleration
// operators off as they are by default.
func (s *Selector) untolerated(taints []corev1.Taint) (corev1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		tolerated := false
		if s != nil {
			for j := range s.tolerations {
				if s.tolerations[j].ToleratesTaint(klog.Background(), t, false) {
					tolerated = true
					break
				}
			}
		}
		if !tolerated {
			return *t, true
		}
	}
	return corev1.Taint{}, false
}
