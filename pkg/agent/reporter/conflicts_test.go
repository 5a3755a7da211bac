package reporter

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOnlyConflicts(t *testing.T) {
	gr := schema.GroupResource{Group: "fleetfit.io", Resource: "clusterinventories"}
	conflict := apierrors.NewConflict(gr, "c1", errors.New("the object has been modified"))
	forbidden := apierrors.NewForbidden(gr, "c1", errors.New("no"))
	cases := map[string]struct {
		err  error
		want bool
	}{
		"a conflict":                          {conflict, true},
		"a wrapped conflict":                  {fmt.Errorf("ClusterInventory: %w", conflict), true},
		"conflicts of two steps":              {errors.Join(fmt.Errorf("a: %w", conflict), fmt.Errorf("b: %w", conflict)), true},
		"a conflict beside another error":     {errors.Join(fmt.Errorf("a: %w", conflict), fmt.Errorf("b: %w", forbidden)), false},
		"a conflict joined deeper with other": {fmt.Errorf("a: %w", errors.Join(conflict, forbidden)), false},
		"another error":                       {forbidden, false},
		"a plain error":                       {errors.New("connection refused"), false},
	}
	for name, tc := range cases {
		if got := onlyConflicts(tc.err); got != tc.want {
			t.Errorf("%s: onlyConflicts(%v) = %v, want %v", name, tc.err, got, tc.want)
		}
	}
}
