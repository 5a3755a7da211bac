package validation

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory/devicecel"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const avx = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"

func requirementCases() map[string]validationCase {
	res := utiltesting.MakeResource
	feature := func(key string) *utiltesting.RequirementWrapper { return utiltesting.MakeFeature("f", key) }
	long := func(n int) string { return strings.Repeat("a", n) }
	manyValues := make([]string, maxFeatureValues+1)
	for i := range manyValues {
		manyValues[i] = fmt.Sprintf("v%d", i)
	}

	devices := func(d v1alpha1.DeviceRequirement) v1alpha1.ResourceRequirement {
		return v1alpha1.ResourceRequirement{Name: "gpus", Devices: &d}
	}
	a100 := []v1alpha1.DeviceSelector{{CEL: &v1alpha1.CELDeviceSelector{Expression: `device.attributes["gpu.example.com"].model == "A100"`}}}
	dev0 := req0.Child("devices")
	cases := map[string]validationCase{
		"two A100 devices": {
			intent: intentRequiring(cpu(), devices(v1alpha1.DeviceRequirement{DeviceClassName: "gpu.example.com", Count: ptr.To[int32](2), Selectors: a100})),
		},
		"devices and a resource in one requirement": {
			intent: func() *v1alpha1.HPAIntent {
				r := devices(v1alpha1.DeviceRequirement{DeviceClassName: "gpu.example.com"})
				r.Resource = &v1alpha1.ResourceAmount{Name: "cpu", Requests: ptr.To(resource.MustParse("1"))}
				return intentRequiring(r)
			}(),
			want: field.ErrorList{field.Invalid(req0, omit, msgResourceXorFeature)},
		},
		"optional devices": {
			intent: func() *v1alpha1.HPAIntent {
				r := devices(v1alpha1.DeviceRequirement{DeviceClassName: "gpu.example.com"})
				r.Mandatory = ptr.To(false)
				return intentRequiring(r)
			}(),
			want: field.ErrorList{field.Invalid(req0, omit, msgOptionalDevices)},
		},
		"no devices": {
			intent: intentRequiring(devices(v1alpha1.DeviceRequirement{DeviceClassName: "gpu.example.com", Count: ptr.To[int32](0)})),
			want:   field.ErrorList{field.Invalid(dev0, omit, msgDeviceCount)},
		},
		"33 devices": {
			intent: intentRequiring(devices(v1alpha1.DeviceRequirement{DeviceClassName: "gpu.example.com", Count: ptr.To[int32](33)})),
			want:   field.ErrorList{field.Invalid(dev0.Child("count"), int64(33), "should be less than or equal to 32")},
		},
		"devices without a class": {
			intent: intentRequiring(devices(v1alpha1.DeviceRequirement{})),
			want:   field.ErrorList{field.Invalid(dev0.Child("deviceClassName"), "", "should be at least 1 chars long")},
		},
		"a class name that is no DeviceClass name": {
			intent: intentRequiring(devices(v1alpha1.DeviceRequirement{DeviceClassName: "GPU_Example"})),
			want: field.ErrorList{field.Invalid(dev0.Child("deviceClassName"), "GPU_Example",
				describe("must be the name of a DeviceClass, such as gpu.example.com", k8svalidation.IsDNS1123Subdomain("GPU_Example")))},
			goOnly: true,
		},
		"a selector that does not compile": {
			intent: intentRequiring(devices(v1alpha1.DeviceRequirement{DeviceClassName: "gpu.example.com",
				Selectors: []v1alpha1.DeviceSelector{{CEL: &v1alpha1.CELDeviceSelector{Expression: `device.attributes[`}}}})),
			want: field.ErrorList{field.Invalid(dev0.Child("selectors").Index(0).Child("cel", "expression"), `device.attributes[`,
				devicecelError(`device.attributes[`))},
			goOnly: true,
		},
		"a selector that is no bool": {
			intent: intentRequiring(devices(v1alpha1.DeviceRequirement{DeviceClassName: "gpu.example.com",
				Selectors: []v1alpha1.DeviceSelector{{CEL: &v1alpha1.CELDeviceSelector{Expression: `device.driver`}}}})),
			want: field.ErrorList{field.Invalid(dev0.Child("selectors").Index(0).Child("cel", "expression"), `device.driver`,
				devicecelError(`device.driver`))},
			goOnly: true,
		},
		"a selector too long": {
			intent: intentRequiring(devices(v1alpha1.DeviceRequirement{DeviceClassName: "gpu.example.com",
				Selectors: []v1alpha1.DeviceSelector{{CEL: &v1alpha1.CELDeviceSelector{Expression: long(v1alpha1.MaxDeviceSelectorLength + 1)}}}})),
			want: field.ErrorList{field.TooLong(dev0.Child("selectors").Index(0).Child("cel", "expression"), "", v1alpha1.MaxDeviceSelectorLength)},
		},
		"requirement without name": {
			intent: intentRequiring(res("", "cpu").Requests("1").Obj()),
			want:   field.ErrorList{field.Invalid(req0.Child("name"), "", "should be at least 1 chars long")},
		},
		"neither resource nor feature": {
			intent: intentRequiring(utiltesting.MakeRequirement("x").Obj()),
			want:   field.ErrorList{field.Invalid(req0, omit, msgResourceXorFeature)},
		},
		"both resource and feature": {
			intent: intentRequiring(res("x", "cpu").Requests("1").Feature(avx).Values("true").Obj()),
			want:   field.ErrorList{field.Invalid(req0, omit, msgResourceXorFeature)},
		},
		"optional without weight": {
			intent: intentRequiring(res("gpu", "nvidia.com/gpu").Limits("1").Mandatory(false).Obj()),
		},
		"weight on a requirement mandatory by default": {
			intent: intentRequiring(res("gpu", "nvidia.com/gpu").Limits("1").Weight(5).Obj()),
			want:   field.ErrorList{field.Invalid(req0.Child("weight"), int64(5), msgWeightOnMandatory)},
		},
		"weight on a requirement said mandatory": {
			intent: intentRequiring(res("gpu", "nvidia.com/gpu").Limits("1").Mandatory(true).Weight(5).Obj()),
			want:   field.ErrorList{field.Invalid(req0.Child("weight"), int64(5), msgWeightOnMandatory)},
		},
		"weight 0": {
			intent: intentRequiring(res("gpu", "nvidia.com/gpu").Limits("1").Optional(0).Obj()),
			want:   field.ErrorList{field.Invalid(req0.Child("weight"), int64(0), "should be greater than or equal to 1")},
		},
		"weight 11": {
			intent: intentRequiring(res("gpu", "nvidia.com/gpu").Limits("1").Optional(11).Obj()),
			want:   field.ErrorList{field.Invalid(req0.Child("weight"), int64(11), "should be less than or equal to 10")},
		},
		"weights 1 and 10": {
			intent: intentRequiring(
				res("gpu", "nvidia.com/gpu").Limits("1").Optional(1).Obj(),
				res("qat", "intel.com/qat").Limits("1").Optional(10).Obj(),
			),
		},
		"resource without name": {
			intent: intentRequiring(res("r", "").Requests("1").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("name"), "", "should be at least 1 chars long")},
		},
		"resource name too long": {
			intent: intentRequiring(res("r", long(254)).Requests("1").Obj()),
			want:   field.ErrorList{field.TooLong(res0.Child("name"), "", 253)},
		},
		"resource name with a space": {
			intent: intentRequiring(res("r", "nvidia gpu").Requests("1").Obj()),
			want: field.ErrorList{field.Invalid(res0.Child("name"), "nvidia gpu",
				describe(msgResourceName, k8svalidation.IsQualifiedName("nvidia gpu")))},
			goOnly: true,
		},
		"resource name with two prefixes": {
			intent: intentRequiring(res("r", "a.io/b/gpu").Requests("1").Obj()),
			want: field.ErrorList{field.Invalid(res0.Child("name"), "a.io/b/gpu",
				describe(msgResourceName, k8svalidation.IsQualifiedName("a.io/b/gpu")))},
			goOnly: true,
		},
		"hugepages and extended resources": {
			intent: intentRequiring(
				res("huge", "hugepages-2Mi").Requests("1Gi").Limits("1Gi").Obj(),
				res("qat", "qat.intel.com/generic").Limits("2").Obj(),
			),
		},
		"neither requests nor limits": {
			intent: intentRequiring(res("cpu", "cpu").Obj()),
			want:   field.ErrorList{field.Invalid(res0, omit, msgRequestsOrLimits)},
		},
		"requests exceed limits": {
			intent: intentRequiring(res("cpu", "cpu").Requests("2").Limits("1500m").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("requests"), "2", msgRequestsExceedLimits("2", "1500m"))},
		},
		"requests exceed limits written differently": {
			intent: intentRequiring(res("mem", "memory").Requests("2Gi").Limits("2G").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("requests"), "2Gi", "requests (2Gi) must not exceed limits (2G)")},
		},
		"negative requests": {
			intent: intentRequiring(res("cpu", "cpu").Requests("-1").Obj()),
			want:   field.ErrorList{field.Invalid(res0, omit, msgNegativeAmount)},
		},
		"negative limits": {
			intent: intentRequiring(res("cpu", "cpu").Limits("-1").Obj()),
			want:   field.ErrorList{field.Invalid(res0, omit, msgNegativeAmount)},
		},
		"zero requests": {
			intent: intentRequiring(res("gpu", "nvidia.com/gpu").Requests("0").Obj()),
		},
		"legacy units": {
			intent: intentRequiring(
				res("k", "memory").Requests("12").Limits("12").Units("K").Obj(),
				res("kib", "hugepages-2Mi").Requests("2048").Units("KiB").Obj(),
				res("gb", "ephemeral-storage").Limits("20").Units("GB").Obj(),
			),
		},
		"legacy units with part of one": {
			intent: intentRequiring(res("mem", "memory").Requests("1.5").Units("MB").Obj()),
			want:   field.ErrorList{field.Invalid(res0, omit, msgUnitsNeedIntegers)},
		},
		"legacy units with fractional limits": {
			intent: intentRequiring(res("mem", "memory").Requests("1").Limits("2.5").Units("GiB").Obj()),
			want:   field.ErrorList{field.Invalid(res0, omit, msgUnitsNeedIntegers)},
		},
		"legacy units with a negative amount": {
			intent: intentRequiring(res("mem", "memory").Requests("-5").Units("MB").Obj()),
			want:   field.ErrorList{field.Invalid(res0, omit, msgNegativeAmount)},
		},
		"legacy units beyond int64 are too large, not fractional": {
			intent: intentRequiring(res("mem", "memory").Requests("10000000000000000000").Units("KB").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("requests"), "10E", msgAmountTooLarge("KB"))},
		},
		"1e300 with units TiB is too large, not fractional": {
			intent: intentRequiring(res("mem", "memory").Requests("1e300").Units("TiB").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("requests"), "1e300", msgAmountTooLarge("TiB"))},
		},
		"too large and fractional with units": {
			intent: intentRequiring(res("mem", "memory").Requests("1.5").Limits("9000.5").Units("TiB").Obj()),
			want: field.ErrorList{
				field.Invalid(res0, omit, msgUnitsNeedIntegers),
				field.Invalid(res0.Child("limits"), "9000500m", msgAmountTooLarge("TiB")),
			},
		},
		"cpu 1e19": {
			intent: intentRequiring(res("cpu", "cpu").Requests("1e19").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("requests"), "10e18", msgAmountTooLarge(""))},
		},
		"cpu 1e308 in limits alone": {
			intent: intentRequiring(res("cpu", "cpu").Limits("1e308").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("limits"), "100e306", msgAmountTooLarge(""))},
		},
		"nvidia.com/gpu 1e19 in limits alone": {
			intent: intentRequiring(res("gpu", "nvidia.com/gpu").Limits("1e19").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("limits"), "10e18", msgAmountTooLarge(""))},
		},
		"requests and limits both too large": {
			intent: intentRequiring(res("mem", "memory").Requests("8Ei").Limits("1e20").Obj()),
			want: field.ErrorList{
				field.Invalid(res0.Child("requests"), "9223372036854775807", msgAmountTooLarge("")),
				field.Invalid(res0.Child("limits"), "100e18", msgAmountTooLarge("")),
			},
		},
		// The CRD refuses these from their spelling, since the API server
		// would take minutes to compare or parse them, and Go from their
		// value; validation answers at once.
		"cpu 1e709551616": {
			intent: intentRequiring(res("cpu", "cpu").Requests("1e709551616").Obj()),
			want: field.ErrorList{
				field.Invalid(res0, omit, msgLongExponent),
				field.Invalid(res0.Child("requests"), "10e709551615", msgAmountTooLarge("")),
			},
		},
		"requests compared with limits 1e709551616": {
			intent: intentRequiring(res("cpu", "cpu").Requests("1").Limits("1e709551616").Obj()),
			want: field.ErrorList{
				field.Invalid(res0, omit, msgLongExponent),
				field.Invalid(res0.Child("limits"), "10e709551615", msgAmountTooLarge("")),
			},
		},
		"requests 1e709551616 above limits": {
			intent: intentRequiring(res("cpu", "cpu").Requests("1e709551616").Limits("1").Obj()),
			want: field.ErrorList{
				field.Invalid(res0, omit, msgLongExponent),
				field.Invalid(res0.Child("requests"), "10e709551615", msgAmountTooLarge("")),
			},
		},
		"1e709551616 with units TiB": {
			intent: intentRequiring(res("mem", "memory").Requests("1e709551616").Units("TiB").Obj()),
			want: field.ErrorList{
				field.Invalid(res0, omit, msgLongExponent),
				field.Invalid(res0.Child("requests"), "10e709551615", msgAmountTooLarge("TiB")),
			},
		},
		"exclusiveCPU with cpu and memory 1e709551616": {
			intent: intentWith(consumer("app").ExclusiveCPU().Requirement(
				res("cpu", "cpu").Requests("1e709551616").Limits("1e709551616").Obj(),
				res("mem", "memory").Requests("1e709551616").Limits("1e709551616").Obj(),
			).Obj()).Obj(),
			want: field.ErrorList{
				field.Invalid(res0, omit, msgLongExponent),
				field.Invalid(res0.Child("requests"), "10e709551615", msgAmountTooLarge("")),
				field.Invalid(res0.Child("limits"), "10e709551615", msgAmountTooLarge("")),
				field.Invalid(reqs0.Index(1).Child("resource"), omit, msgLongExponent),
				field.Invalid(reqs0.Index(1).Child("resource", "requests"), "10e709551615", msgAmountTooLarge("")),
				field.Invalid(reqs0.Index(1).Child("resource", "limits"), "10e709551615", msgAmountTooLarge("")),
				field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveCPU),
				field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveMemory),
			},
		},
		"1e999 has a short enough exponent and is too large": {
			intent: intentRequiring(res("cpu", "cpu").Requests("1e999").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("requests"), "1e999", msgAmountTooLarge(""))},
		},
		"the largest amount": {
			intent: intentRequiring(res("mem", "memory").Requests("9223372036854775").Limits("9223372036854775").Obj()),
		},
		"a thousandth beyond the largest amount": {
			intent: intentRequiring(res("cpu", "cpu").Requests("9223372036854775001m").Obj()),
			want:   field.ErrorList{field.Invalid(res0.Child("requests"), "9223372036854775001m", msgAmountTooLarge(""))},
		},
		"too large in the second requirement": {
			intent: intentRequiring(
				res("cpu", "cpu").Requests("1").Obj(),
				res("mem", "memory").Requests("1e19").Obj(),
			),
			want: field.ErrorList{field.Invalid(reqs0.Index(1).Child("resource", "requests"), "10e18", msgAmountTooLarge(""))},
		},
		"legacy units with a canonical 1k": {
			intent: intentRequiring(res("mem", "memory").Requests("1k").Limits("1e3").Units("MiB").Obj()),
		},
		"units not supported": {
			intent: intentRequiring(res("mem", "memory").Requests("200").Units("PB").Obj()),
			want:   field.ErrorList{field.NotSupported(res0.Child("units"), "PB", legacyUnits)},
		},

		"feature with values": {
			intent: intentRequiring(feature(avx).Values("true").Obj()),
		},
		"feature with EMCO's value": {
			intent: intentRequiring(feature("nvidia.com/gpu.product").Value("NVIDIA-A100-SXM4-80GB").Obj()),
		},
		"every operator": {
			intent: intentRequiring(
				utiltesting.MakeFeature("in", avx).Operator(corev1.NodeSelectorOpIn).Values("true").Obj(),
				utiltesting.MakeFeature("notin", "nvidia.com/gpu.product").Operator(corev1.NodeSelectorOpNotIn).Values("Tesla-T4", "Tesla-K80").Obj(),
				utiltesting.MakeFeature("exists", "intel.com/sgx").Operator(corev1.NodeSelectorOpExists).Obj(),
				utiltesting.MakeFeature("absent", "node-role.kubernetes.io/control-plane").Operator(corev1.NodeSelectorOpDoesNotExist).Obj(),
				utiltesting.MakeFeature("gt", "nvidia.com/gpu.memory").Operator(corev1.NodeSelectorOpGt).Values("40000").Obj(),
				// Gt and Lt values are integers, not label values.
				utiltesting.MakeFeature("lt", "example.com/temperature").Operator(corev1.NodeSelectorOpLt).Values("-8").Obj(),
			),
		},
		"feature without key": {
			intent: intentRequiring(feature("").Values("true").Obj()),
			want:   field.ErrorList{field.Invalid(feat0.Child("key"), "", "should be at least 1 chars long")},
		},
		"feature key too long": {
			intent: intentRequiring(feature(long(318)).Values("true").Obj()),
			want:   field.ErrorList{field.TooLong(feat0.Child("key"), "", 317)},
		},
		"feature key not a label key": {
			intent: intentRequiring(feature("nvidia.com/gpu product").Values("x").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("key"), "nvidia.com/gpu product",
				describe(msgFeatureKey, k8svalidation.IsQualifiedName("nvidia.com/gpu product")))},
			goOnly: true,
		},
		"operator not supported": {
			intent: intentRequiring(feature(avx).Operator("Matches").Values("true").Obj()),
			want:   field.ErrorList{field.NotSupported(feat0.Child("operator"), corev1.NodeSelectorOperator("Matches"), featureOperators)},
		},
		"value and values": {
			intent: intentRequiring(feature(avx).Value("true").Values("true").Obj()),
			want:   field.ErrorList{field.Forbidden(feat0.Child("values"), msgValueAndValues)},
		},
		"value with NotIn": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpNotIn).Value("true").Obj()),
			want:   field.ErrorList{field.Forbidden(feat0.Child("value"), msgValueNeedsIn)},
		},
		"values with Exists": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpExists).Values("true").Obj()),
			want:   field.ErrorList{field.Forbidden(feat0.Child("values"), "operator Exists takes no values")},
		},
		"value with DoesNotExist": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpDoesNotExist).Value("true").Obj()),
			want: field.ErrorList{
				field.Forbidden(feat0.Child("value"), msgValueNeedsIn),
				field.Forbidden(feat0.Child("value"), "operator DoesNotExist takes no values"),
			},
		},
		"In without values": {
			intent: intentRequiring(feature(avx).Obj()),
			want:   field.ErrorList{field.Required(feat0.Child("values"), "operator In needs at least one value")},
		},
		"NotIn without values": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpNotIn).Obj()),
			want:   field.ErrorList{field.Required(feat0.Child("values"), "operator NotIn needs at least one value")},
		},
		"Gt without values": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpGt).Obj()),
			want:   field.ErrorList{field.Invalid(feat0.Child("values"), []string(nil), msgNeedsOneInteger(corev1.NodeSelectorOpGt))},
		},
		"Lt with two values": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpLt).Values("1", "2").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("values"), []string{"1", "2"},
				`operator Lt takes exactly one integer value, e.g. values: ["8"]`)},
		},
		"Gt beyond int64": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpGt).Values("99999999999999999999").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("values").Index(0), "99999999999999999999",
				"operator Gt compares 64-bit integers, from -9223372036854775808 to 9223372036854775807, as node affinity does; 99999999999999999999 is out of range")},
		},
		"Gt one beyond MaxInt64": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpGt).Values("9223372036854775808").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("values").Index(0), "9223372036854775808",
				msgIntegerOutOfRange(corev1.NodeSelectorOpGt, "9223372036854775808"))},
		},
		"Lt one below MinInt64": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpLt).Values("-9223372036854775809").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("values").Index(0), "-9223372036854775809",
				msgIntegerOutOfRange(corev1.NodeSelectorOpLt, "-9223372036854775809"))},
		},
		"Gt and Lt at the ends of int64, with leading zeros": {
			intent: intentRequiring(
				utiltesting.MakeFeature("max", avx).Operator(corev1.NodeSelectorOpGt).Values("9223372036854775807").Obj(),
				utiltesting.MakeFeature("min", avx).Operator(corev1.NodeSelectorOpLt).Values("-9223372036854775808").Obj(),
				utiltesting.MakeFeature("zeros", avx).Operator(corev1.NodeSelectorOpGt).Values("-0000000000000000000000000009223372036854775808").Obj(),
				utiltesting.MakeFeature("zero", avx).Operator(corev1.NodeSelectorOpLt).Values("-0").Obj(),
			),
		},
		"Lt with leading zeros beyond int64": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpLt).Values("00009223372036854775808").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("values").Index(0), "00009223372036854775808",
				msgIntegerOutOfRange(corev1.NodeSelectorOpLt, "00009223372036854775808"))},
		},
		"Gt with a word": {
			intent: intentRequiring(feature(avx).Operator(corev1.NodeSelectorOpGt).Values("eight").Obj()),
			want:   field.ErrorList{field.Invalid(feat0.Child("values"), []string{"eight"}, msgNeedsOneInteger(corev1.NodeSelectorOpGt))},
		},
		"too many values": {
			intent: intentRequiring(feature(avx).Values(manyValues...).Obj()),
			want:   field.ErrorList{field.TooMany(feat0.Child("values"), 65, 64)},
		},
		"value in values too long": {
			intent: intentRequiring(feature(avx).Values("true", long(64)).Obj()),
			want:   field.ErrorList{field.TooLong(feat0.Child("values").Index(1), "", 63)},
		},
		"EMCO's value too long": {
			intent: intentRequiring(feature(avx).Value(long(64)).Obj()),
			want:   field.ErrorList{field.TooLong(feat0.Child("value"), "", 63)},
		},
		"value not a label value": {
			intent: intentRequiring(feature("nvidia.com/gpu.product").Values("A100 80GB").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("values").Index(0), "A100 80GB",
				describe(msgFeatureValue, k8svalidation.IsValidLabelValue("A100 80GB")))},
			goOnly: true,
		},
		"NotIn value not a label value": {
			intent: intentRequiring(feature("nvidia.com/gpu.product").Operator(corev1.NodeSelectorOpNotIn).Values("T4", "K80!").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("values").Index(1), "K80!",
				describe(msgFeatureValue, k8svalidation.IsValidLabelValue("K80!")))},
			goOnly: true,
		},
		"EMCO's value not a label value": {
			intent: intentRequiring(feature("nvidia.com/gpu.product").Value("-A100").Obj()),
			want: field.ErrorList{field.Invalid(feat0.Child("value"), "-A100",
				describe(msgFeatureValue, k8svalidation.IsValidLabelValue("-A100")))},
			goOnly: true,
		},
	}
	// Each legacy unit at the largest whole number the CRD admits and one
	// beyond: the CRD's table of maxima must agree with MaxAmountIn.
	for _, units := range legacyUnits {
		most, ok := v1alpha1.MaxAmountIn(units)
		if !ok {
			panic("no maximum for units " + units)
		}
		atMost, beyond := strconv.FormatInt(most, 10), strconv.FormatInt(most+1, 10)
		sent := resource.MustParse(beyond)
		cases["units "+units+" at the largest amount"] = validationCase{
			intent: intentRequiring(res("mem", "memory").Requests(atMost).Limits(atMost).Units(units).Obj()),
		}
		cases["units "+units+" beyond the largest amount"] = validationCase{
			intent: intentRequiring(res("mem", "memory").Requests(atMost).Limits(beyond).Units(units).Obj()),
			want: field.ErrorList{field.Invalid(res0.Child("limits"), sent.String(),
				"must be at most "+atMost+" with units "+units+", the largest amount fleetfit can count (about 8 PiB of memory, 9.2e15 of other resources)")},
		}
	}
	return cases
}

// devicecelError is what devicecel says of an expression it refuses.
func devicecelError(expr string) string {
	err := devicecel.Check(expr)
	if err == nil {
		panic("devicecel accepts " + expr)
	}
	return err.Error()
}
