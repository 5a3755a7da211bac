package validation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

func TestValidateHPAIntent(t *testing.T) {
	for name, tc := range validationCases() {
		t.Run(name, func(t *testing.T) {
			before := tc.intent.DeepCopy()
			got := ValidateHPAIntent(tc.intent)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ValidateHPAIntent() errors (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.intent); diff != "" {
				t.Errorf("ValidateHPAIntent() changed the intent (-before,+after):\n%s", diff)
			}
			if len(got) == 0 {
				assertAmountsConvert(t, tc.intent)
			}
		})
	}
}

// assertAmountsConvert checks ValidateHPAIntent's promise that the amounts
// of an intent it accepts convert without error.
func assertAmountsConvert(t *testing.T, intent *v1alpha1.HPAIntent) {
	t.Helper()
	for _, c := range intent.Spec.Consumers {
		for _, r := range c.Requirements {
			if r.Resource == nil {
				continue
			}
			if _, err := r.Resource.EffectiveRequests(); err != nil {
				t.Errorf("Consumer %s, requirement %s: EffectiveRequests() of a valid intent failed: %v", c.Name, r.Name, err)
			}
			if _, err := r.Resource.EffectiveLimits(); err != nil {
				t.Errorf("Consumer %s, requirement %s: EffectiveLimits() of a valid intent failed: %v", c.Name, r.Name, err)
			}
		}
	}
}

func TestValidateNilHPAIntent(t *testing.T) {
	want := field.ErrorList{field.Required(field.NewPath("spec"), "no HPAIntent to validate")}
	if diff := cmp.Diff(want, ValidateHPAIntent(nil)); diff != "" {
		t.Errorf("ValidateHPAIntent(nil) errors (-want,+got):\n%s", diff)
	}
}

// TestMessagesSayHowToFix pins the wording of the checks the CRD cannot make,
// which the table builds from the same constants as the code: a user must
// learn what is expected, then what Kubernetes found wrong.
func TestMessagesSayHowToFix(t *testing.T) {
	cases := map[string]struct {
		intent     *v1alpha1.HPAIntent
		wantPrefix string
	}{
		"resource name": {
			intent: validationCases()["resource name with a space"].intent,
			wantPrefix: `spec.consumers[0].requirements[0].resource.name: Invalid value: "nvidia gpu": ` +
				`must be a Kubernetes resource name, such as cpu, memory, hugepages-2Mi or nvidia.com/gpu; ` +
				`name part must consist of alphanumeric characters`,
		},
		"feature key": {
			intent: validationCases()["feature key not a label key"].intent,
			wantPrefix: `spec.consumers[0].requirements[0].feature.key: Invalid value: "nvidia.com/gpu product": ` +
				`must be a node label key, such as feature.node.kubernetes.io/cpu-cpuid.AVX512F or nvidia.com/gpu.product; ` +
				`name part must consist of alphanumeric characters`,
		},
		"feature value": {
			intent: validationCases()["value not a label value"].intent,
			wantPrefix: `spec.consumers[0].requirements[0].feature.values[0]: Invalid value: "A100 80GB": ` +
				`must be a valid node label value, since it is compared with node labels, e.g. NVIDIA-A100-SXM4-80GB; ` +
				`a valid label must be an empty string or consist of alphanumeric characters`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			errs := ValidateHPAIntent(tc.intent)
			if len(errs) != 1 {
				t.Fatalf("ValidateHPAIntent() returned %d errors, want 1: %v", len(errs), errs)
			}
			if got := errs[0].Error(); !strings.HasPrefix(got, tc.wantPrefix) {
				t.Errorf("ValidateHPAIntent() message\n got: %s\nwant: %s...", got, tc.wantPrefix)
			}
		})
	}
}
