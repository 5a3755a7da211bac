package emco

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func quantity(s string) *resource.Quantity {
	q := resource.MustParse(s)
	return &q
}

// TestRequirementRoundTrip maps EMCO requirements to HPAIntent requirements and back: the
// HPAIntent gets the amounts the CRD accepts, and the API returns what was posted.
func TestRequirementRoundTrip(t *testing.T) {
	cases := map[string]struct {
		body string
		want v1alpha1.ResourceRequirement
		// echo is what GET returns, when it is not the body itself.
		echo string
	}{
		"legacy units": {
			body: `{"metadata":{"name":"core-fwall-RAM-needs","description":"","userData1":"","userData2":""},"spec":{"mandatory":true,"allocatable":true,"name":"memory","requests":1000,"limits":1000,"units":"MB"}}`,
			want: v1alpha1.ResourceRequirement{Name: "core-fwall-RAM-needs", Mandatory: ptr.To(true),
				Resource: &v1alpha1.ResourceAmount{Name: "memory", Requests: quantity("1000"), Limits: quantity("1000"), Units: "MB"}},
		},
		"optional, limits only": {
			body: `{"metadata":{"name":"core-fwall-gpu-needs","description":"","userData1":"","userData2":""},"spec":{"mandatory":false,"weight":9,"allocatable":true,"name":"nvidia.com/gpu","limits":1}}`,
			want: v1alpha1.ResourceRequirement{Name: "core-fwall-gpu-needs", Mandatory: ptr.To(false), Weight: ptr.To[int32](9),
				Resource: &v1alpha1.ResourceAmount{Name: "nvidia.com/gpu", Limits: quantity("1")}},
		},
		"a quantity string is kept as written": {
			body: `{"metadata":{"name":"m","description":"d","userData1":"","userData2":"x"},"spec":{"mandatory":true,"allocatable":true,"name":"memory","requests":"2Gi","limits":"2048Mi"}}`,
			want: v1alpha1.ResourceRequirement{Name: "m", Mandatory: ptr.To(true),
				Resource: &v1alpha1.ResourceAmount{Name: "memory", Requests: quantity("2Gi"), Limits: quantity("2048Mi")}},
		},
		"mandatory defaults to true": {
			body: `{"metadata":{"name":"c","description":"","userData1":"","userData2":""},"spec":{"allocatable":true,"name":"cpu","requests":2}}`,
			want: v1alpha1.ResourceRequirement{Name: "c", Resource: &v1alpha1.ResourceAmount{Name: "cpu", Requests: quantity("2")}},
			echo: `{"metadata":{"name":"c","description":"","userData1":"","userData2":""},"spec":{"mandatory":true,"allocatable":true,"name":"cpu","requests":2}}`,
		},
		"a node label as EMCO's design writes it": {
			body: `{"metadata":{"name":"turbo","description":"","userData1":"","userData2":""},"spec":{"mandatory":true,"allocatable":false,"name":"feature.node.kubernetes.io/cpu-pstate.turbo","value":"true"}}`,
			want: v1alpha1.ResourceRequirement{Name: "turbo", Mandatory: ptr.To(true),
				Feature: &v1alpha1.FeatureRequirement{Key: "feature.node.kubernetes.io/cpu-pstate.turbo", Value: "true"}},
		},
		"a node label as key": {
			body: `{"metadata":{"name":"gpu","description":"","userData1":"","userData2":""},"spec":{"mandatory":true,"allocatable":false,"key":"nvidia.com/gpu.product","value":"A100"}}`,
			want: v1alpha1.ResourceRequirement{Name: "gpu", Mandatory: ptr.To(true),
				Feature: &v1alpha1.FeatureRequirement{Key: "nvidia.com/gpu.product", Value: "A100"}},
		},
		"a node label with an operator": {
			body: `{"metadata":{"name":"avx","description":"","userData1":"","userData2":""},"spec":{"mandatory":true,"allocatable":false,"key":"feature.node.kubernetes.io/cpu-cpuid.AVX512F","operator":"Exists"}}`,
			want: v1alpha1.ResourceRequirement{Name: "avx", Mandatory: ptr.To(true),
				Feature: &v1alpha1.FeatureRequirement{Key: "feature.node.kubernetes.io/cpu-cpuid.AVX512F", Operator: "Exists"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var body Requirement
			if err := json.Unmarshal([]byte(tc.body), &body); err != nil {
				t.Fatal(err)
			}
			got, part, shapeErr := requirementFrom(&body)
			if shapeErr != nil {
				t.Fatal(shapeErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("requirement (-want,+got):\n%s", diff)
			}
			in := utiltesting.MakeHPAIntent("i", "ns").Placement("p").Consumer(
				utiltesting.MakeConsumer("c").Target("Deployment", "d", "main").Requirement(got).Obj()).Obj()
			keep(in, "c", got.Name, part)
			// What the API server stores is what a Go client sends: canonical amounts.
			stored := in.DeepCopy()
			for i := range stored.Spec.Consumers[0].Requirements {
				if r := stored.Spec.Consumers[0].Requirements[i].Resource; r != nil {
					for _, q := range []*resource.Quantity{r.Requests, r.Limits} {
						if q != nil {
							*q = resource.MustParse(q.String())
						}
					}
				}
			}
			out, err := json.Marshal(requirementResponse(stored, "c", got.Name))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.echo
			if want == "" {
				want = tc.body
			}
			if diff := cmp.Diff(want, string(out)); diff != "" {
				t.Errorf("GET (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestAmountOut: an amount changed since it was posted is returned as it is now.
func TestAmountOut(t *testing.T) {
	cases := map[string]struct {
		q      string
		posted string
		want   string
	}{
		"as posted":              {q: "1k", posted: "1000", want: "1000"},
		"posted as a string":     {q: "1k", posted: `"1000"`, want: `"1000"`},
		"changed since":          {q: "2", posted: "1", want: "2"},
		"never posted, whole":    {q: "4", want: "4"},
		"never posted, quantity": {q: "500m", want: `"500m"`},
		"never posted, suffix":   {q: "2Gi", want: `"2Gi"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var posted json.RawMessage
			if tc.posted != "" {
				posted = json.RawMessage(tc.posted)
			}
			if got := string(amountOut(quantity(tc.q), posted)); got != tc.want {
				t.Errorf("amountOut(%s, %s) = %s, want %s", tc.q, tc.posted, got, tc.want)
			}
		})
	}
}

// TestRequirementShape: EMCO's two forms of a requirement each refuse the other's fields.
func TestRequirementShape(t *testing.T) {
	cases := map[string]struct {
		spec string
		want string
	}{
		"allocatable missing":      {spec: `{"name":"cpu","requests":1}`, want: "spec.allocatable: Required value"},
		"value of an amount":       {spec: `{"allocatable":true,"name":"cpu","value":"x"}`, want: "spec.value: Forbidden"},
		"key of an amount":         {spec: `{"allocatable":true,"name":"cpu","key":"x"}`, want: "spec.key: Forbidden"},
		"limits of a label":        {spec: `{"allocatable":false,"key":"x","value":"y","limits":1}`, want: "spec.limits: Forbidden"},
		"units of a label":         {spec: `{"allocatable":false,"key":"x","value":"y","units":"MB"}`, want: "spec.units: Forbidden"},
		"key and name of a label":  {spec: `{"allocatable":false,"key":"x","name":"y","value":"z"}`, want: "spec.name: Forbidden"},
		"an amount that is a list": {spec: `{"allocatable":true,"name":"cpu","requests":[1]}`, want: `spec.requests: Invalid value: "[1]"`},
		"an amount not a quantity": {spec: `{"allocatable":true,"name":"cpu","requests":"lots"}`, want: `spec.requests: Invalid value: "\"lots\""`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var body Requirement
			if err := json.Unmarshal([]byte(`{"metadata":{"name":"r"},"spec":`+tc.spec+`}`), &body); err != nil {
				t.Fatal(err)
			}
			_, _, err := requirementFrom(&body)
			if err == nil || err.Code != 400 || len(err.Message) < len(tc.want) || err.Message[:len(tc.want)] != tc.want {
				t.Errorf("requirementFrom: %v, want a 400 starting %q", err, tc.want)
			}
		})
	}
}
