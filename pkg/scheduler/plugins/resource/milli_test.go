package resource

import (
	"fmt"
	"math/rand/v2"
	"testing"

	apiresource "k8s.io/apimachinery/pkg/api/resource"
)

// TestMilliWholeUnits checks milli's shortcut for whole units against exactMilli, around the
// bounds and at random.
func TestMilliWholeUnits(t *testing.T) {
	values := []string{"0", "1", "-1", "500m", "1500m", "64Gi", "1e15", "9223372036854775", "9223372036854776",
		"-9223372036854775", "-9223372036854776", "9223372036854775807", "1e19", "-1e19", "2Ei", "1.5", "1n"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		v := rng.Int64() >> rng.IntN(63)
		if rng.IntN(2) == 0 {
			v = -v
		}
		values = append(values, fmt.Sprint(v), fmt.Sprintf("%dm", v), fmt.Sprintf("%dKi", v>>10))
	}
	for _, s := range values {
		q := apiresource.MustParse(s)
		if got, want := milli(q), exactMilli(q); got != want {
			t.Errorf("milli(%s) = %d, want %d", s, got, want)
		}
	}
}
