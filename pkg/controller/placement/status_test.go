package placement

import (
	"testing"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

func TestConditionMessage(t *testing.T) {
	cases := map[string]struct {
		st   *framework.Status
		want string
	}{
		"a plugin's problem is OCM's plugin:message": {
			st:   framework.Misconfiguredf("invalid CEL expression").WithPlugin("Predicate"),
			want: "Predicate:invalid CEL expression",
		},
		"a problem no plugin reported is its message alone": {
			st:   framework.Misconfiguredf("decision group: clustersPerDecisionGroup must be positive"),
			want: "decision group: clustersPerDecisionGroup must be positive",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := conditionMessage(tc.st); got != tc.want {
				t.Errorf("conditionMessage = %q, want %q", got, tc.want)
			}
		})
	}
}
