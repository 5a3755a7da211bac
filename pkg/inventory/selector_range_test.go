package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestSelectorGtLtRange checks the values Gt and Lt compare with: any
// integer an int64 holds compiles, leading zeros and all, and a larger one is
// refused as out of range rather than as no integer.
func TestSelectorGtLtRange(t *testing.T) {
	cases := map[string]struct {
		req     corev1.NodeSelectorRequirement
		wantErr string
		text    string
	}{
		"MaxInt64": {
			req:  req("cores", corev1.NodeSelectorOpGt, "9223372036854775807"),
			text: "cores Gt 9223372036854775807",
		},
		"MinInt64": {
			req:  req("cores", corev1.NodeSelectorOpLt, "-9223372036854775808"),
			text: "cores Lt -9223372036854775808",
		},
		"leading zeros": {
			req:  req("cores", corev1.NodeSelectorOpGt, "-0000000000000000000000000009223372036854775808"),
			text: "cores Gt -0000000000000000000000000009223372036854775808",
		},
		"twenty nines": {
			req: req("cores", corev1.NodeSelectorOpGt, "99999999999999999999"),
			wantErr: "features[0]: cores Gt compares 64-bit integers, from -9223372036854775808 to 9223372036854775807, " +
				"as node affinity does; 99999999999999999999 is out of range",
		},
		"below MinInt64": {
			req: req("cores", corev1.NodeSelectorOpLt, "-9223372036854775809"),
			wantErr: "features[0]: cores Lt compares 64-bit integers, from -9223372036854775808 to 9223372036854775807, " +
				"as node affinity does; -9223372036854775809 is out of range",
		},
		"not an integer": {
			req:     req("cores", corev1.NodeSelectorOpLt, "eight"),
			wantErr: `features[0]: cores Lt needs an integer, got "eight"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sel, err := NewSelector([]corev1.NodeSelectorRequirement{tc.req}, nil)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("NewSelector error (-want,+got):\n%s", diff)
			}
			if err == nil {
				if diff := cmp.Diff(tc.text, sel.String()); diff != "" {
					t.Errorf("Selector text (-want,+got):\n%s", diff)
				}
			}
		})
	}
}
