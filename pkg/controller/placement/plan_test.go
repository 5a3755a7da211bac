package placement

import (
	"strings"
	"testing"
	"time"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestScoreRateLimit(t *testing.T) {
	cases := map[string]struct {
		value   string
		want    time.Duration
		wantErr string
	}{
		"empty is the default": {value: "", want: time.Minute},
		"a duration":           {value: "30s", want: 30 * time.Second},
		"zero":                 {value: "0s", want: 0},
		"not a duration":       {value: "fast", wantErr: `spec.scoreRateLimit "fast" is not a duration such as 30s or 5m`},
		"negative":             {value: "-1m", wantErr: `spec.scoreRateLimit "-1m" is not a duration`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := utiltesting.MakePlacement("p", "ns").Obj()
			p.Spec.ScoreRateLimit = tc.value
			got, err := ScoreRateLimit(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("ScoreRateLimit(%q) = %v, %v; want an error containing %q", tc.value, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ScoreRateLimit(%q) = %v, %v; want %v", tc.value, got, err, tc.want)
			}
		})
	}
}
