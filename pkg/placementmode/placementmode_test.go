package placementmode

import (
	"testing"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestParseMode(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    Mode
		wantErr string
	}{
		"all":       {in: "all", want: All},
		"annotated": {in: "annotated", want: Annotated},
		"empty":     {in: "", wantErr: `must be "all" or "annotated", not ""`},
		"other":     {in: "All", wantErr: `must be "all" or "annotated", not "All"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseMode(tc.in)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("ParseMode(%q) error = %v, want %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("ParseMode(%q) = (%q, %v), want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestHandles(t *testing.T) {
	plain := utiltesting.MakePlacement("p", "ns")
	disabled := plain.Clone().Annotation(clusterv1beta1.PlacementDisableAnnotation, "true")
	cases := map[string]struct {
		placement          *utiltesting.PlacementWrapper
		wantAll, wantAnnot bool
	}{
		"plain":                 {placement: plain, wantAll: true},
		"labelled only":         {placement: plain.Clone().Label(SchedulerLabel, "true"), wantAll: true},
		"disabled":              {placement: disabled},
		"disabled and labelled": {placement: disabled.Clone().Label(SchedulerLabel, "true"), wantAll: true, wantAnnot: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := tc.placement.Obj()
			if got := All.Handles(p); got != tc.wantAll {
				t.Errorf("All.Handles = %v, want %v", got, tc.wantAll)
			}
			if got := Annotated.Handles(p); got != tc.wantAnnot {
				t.Errorf("Annotated.Handles = %v, want %v", got, tc.wantAnnot)
			}
		})
	}
}
