package inventory

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestFreeQuantityPrintsBinaryUnits(t *testing.T) {
	cases := []struct {
		name  corev1.ResourceName
		milli []int64 // added to the sum, node by node
		want  string
	}{
		// 512Gi less pods of 200M and 1G: 210.6Gi, in bytes not divisible by 1Ki.
		{corev1.ResourceMemory, []int64{(512<<30 - 2*200e6 - 1e9 - 300<<30) * 1000}, "210Gi"},
		{corev1.ResourceMemory, []int64{(12<<30 + 5) * 1000}, "12Gi"},
		{corev1.ResourceMemory, []int64{(12<<30 + 512<<20 + 5) * 1000}, "12800Mi"},
		{corev1.ResourceMemory, []int64{364 << 30 * 1000}, "364Gi"},
		{corev1.ResourceMemory, []int64{(99<<30 + 3<<20 + 7) * 1000}, "101379Mi"},
		{corev1.ResourceMemory, []int64{2 << 40 * 1000}, "2Ti"},
		// Small amounts stay exact.
		{corev1.ResourceMemory, []int64{1000 * 1000}, "1k"},
		// Remainders of many nodes add up to whole bytes.
		{corev1.ResourceEphemeralStorage, []int64{(200<<20)*1000 + 600, 600, 600}, "200Mi"},
		{corev1.ResourceCPU, []int64{1500}, "1500m"},
	}
	for _, tc := range cases {
		var s sum
		var exact resource.Quantity
		for _, m := range tc.milli {
			s.add(m)
			exact.Add(*resource.NewMilliQuantity(m, resource.BinarySI))
		}
		got := s.freeQuantity(tc.name)
		if got.String() != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.name, tc.milli, got.String(), tc.want)
		}
		// Never above the sum, and at most 1% below it.
		low := exact.DeepCopy()
		low.Sub(*resource.NewMilliQuantity(MilliOf(exact)/100+1, resource.DecimalSI))
		if got.Cmp(exact) > 0 || got.Cmp(low) < 0 {
			t.Errorf("%s %v: %s is not within 1%% below %s", tc.name, tc.milli, got.String(), exact.String())
		}
	}
}
