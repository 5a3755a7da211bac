package conflict

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestOnly(t *testing.T) {
	intents := schema.GroupResource{Group: "fleetfit.io", Resource: "hpaintents"}
	conflict := apierrors.NewConflict(intents, "web", errors.New("the object has been modified"))
	notFound := apierrors.NewNotFound(intents, "web")
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"a conflict", conflict, true},
		{"a wrapped conflict", fmt.Errorf("updating status of HPAIntent apps/web: %w", conflict), true},
		{"conflicts joined", errors.Join(conflict, fmt.Errorf("cluster c1: %w", conflict)), true},
		{"a conflict joined with another failure", errors.Join(conflict, notFound), false},
		{"a wrapped join with another failure", fmt.Errorf("sync: %w", errors.Join(conflict, errors.New("boom"))), false},
		{"another API error", notFound, false},
		{"a plain error", errors.New("boom"), false},
		{"a conflict only in the text", errors.New(conflict.Error()), false},
		{"an empty join", errors.Join(), false},
	} {
		if got := Only(tc.err); got != tc.want {
			t.Errorf("%s: Only(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
