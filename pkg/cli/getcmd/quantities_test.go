package getcmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAmount(t *testing.T) {
	cases := map[string]struct {
		name     corev1.ResourceName
		quantity string
		want     string
	}{
		"cores":                                {name: corev1.ResourceCPU, quantity: "8", want: "8"},
		"millicores round down":                {name: corev1.ResourceCPU, quantity: "1750m", want: "1.7"},
		"the most cores in thousandths":        {name: corev1.ResourceCPU, quantity: "9223372036854774", want: "9223372036854774"},
		"cpu 1e19 as written":                  {name: corev1.ResourceCPU, quantity: "1e19", want: "10e18"},
		"cpu -1e19 as written":                 {name: corev1.ResourceCPU, quantity: "-1e19", want: "-10e18"},
		"cpu 1e709551616 as written, quickly":  {name: corev1.ResourceCPU, quantity: "1e709551616", want: "10e709551615"},
		"GPUs 1e709551616 as written, quickly": {name: "nvidia.com/gpu", quantity: "1e709551616", want: "10e709551615"},
		"memory in binary units":               {name: corev1.ResourceMemory, quantity: "1536Mi", want: "1.5Gi"},
		"memory 1e308 as written":              {name: corev1.ResourceMemory, quantity: "1e308", want: "100e306"},
		"hugepages 2^64 as written":            {name: "hugepages-2Mi", quantity: "18446744073709551616", want: "18446744073709551616"},
		"devices":                              {name: "nvidia.com/gpu", quantity: "4", want: "4"},
		"twenty nines of GPUs as written":      {name: "nvidia.com/gpu", quantity: "99999999999999999999", want: "99999999999999999999"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, amount(tc.name, resource.MustParse(tc.quantity))); diff != "" {
				t.Errorf("amount(%s, %s) (-want,+got):\n%s", tc.name, tc.quantity, diff)
			}
		})
	}
}
