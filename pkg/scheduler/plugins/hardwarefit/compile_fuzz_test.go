package hardwarefit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1/validation"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// fuzzNode is the one node the compiled requests are asked about.
var fuzzNode = st.MakeNode("n").
	Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "64Gi").
	Resource(gpu, "4").Resource(corev1.ResourcePods, "110").
	Label(gpuProduct, "A100").Label("example.com/cores", "16")

// fuzzIntent builds an intent with one consumer: a fixed mandatory memory
// amount, an amount of any resource (optional with a weight, or mandatory),
// and a node feature, each field from the fuzzer. Strings that are no
// quantity leave requests or limits unset.
func fuzzIntent(resName, requests, limits, units string, optional bool, weight int8, key, op, value, v1, v2 string) *fleetfitv1alpha1.HPAIntent {
	amount := &fleetfitv1alpha1.ResourceAmount{Name: resName, Units: units}
	if q, err := resource.ParseQuantity(requests); err == nil {
		amount.Requests = &q
	}
	if q, err := resource.ParseQuantity(limits); err == nil {
		amount.Limits = &q
	}
	r := fleetfitv1alpha1.ResourceRequirement{Name: "amount", Resource: amount}
	if optional {
		r.Mandatory = ptr.To(false)
		if weight != 0 {
			r.Weight = ptr.To(int32(weight))
		}
	}
	f := &fleetfitv1alpha1.FeatureRequirement{Key: key, Operator: corev1.NodeSelectorOperator(op), Value: value}
	for _, v := range []string{v1, v2} {
		if v != "" {
			f.Values = append(f.Values, v)
		}
	}
	return st.MakeHPAIntent("app", "ns").Placement("p").Consumer(
		st.MakeConsumer("app").Target("Deployment", "app", "main").Requirement(
			st.MakeResource("memory", "memory").Requests("1Gi").Obj(),
			r,
			fleetfitv1alpha1.ResourceRequirement{Name: "feature", Feature: f},
		).Obj()).Obj()
}

// FuzzValidIntentsCompile checks that an HPAIntent Go validation accepts
// (and hence the CRD, which validation mirrors) compiles into inventory
// requests, and that the compiled request never fits a node that lacks a
// mandatory amount: an amount too large to count must not become zero.
func FuzzValidIntentsCompile(f *testing.F) {
	f.Add("cpu", "2", "4", "", false, int8(0), gpuProduct, "In", "", "A100", "")
	f.Add("cpu", "1e19", "", "", false, int8(0), gpuProduct, "In", "A100", "", "")
	f.Add("nvidia.com/gpu", "", "1e19", "", true, int8(5), avx512, "Exists", "", "", "")
	f.Add("memory", "1e300", "", "TiB", false, int8(0), "example.com/cores", "Gt", "", "8", "")
	f.Add("ephemeral-storage", "8388", "8388", "TiB", false, int8(0), "example.com/cores", "Gt", "", "99999999999999999999", "")
	f.Add("cpu", "9223372036854775", "", "", false, int8(0), "example.com/cores", "Lt", "", "-9223372036854775808", "")
	f.Add("hugepages-2Mi", "1.5", "", "MB", true, int8(11), gpuProduct, "NotIn", "", "T4", "K80")
	f.Add("intel.com/qat", "-1", "", "", false, int8(0), gpuProduct, "", "A100", "", "")
	f.Fuzz(func(t *testing.T, resName, requests, limits, units string, optional bool, weight int8, key, op, value, v1, v2 string) {
		if validation.HasLongExponent(requests) || validation.HasLongExponent(limits) {
			// resource.ParseQuantity itself takes minutes over some of
			// these (1e-709551616); the CRD refuses them unparsed.
			t.Skip("an exponent of four digits or more")
		}
		in := fuzzIntent(resName, requests, limits, units, optional, weight, key, op, value, v1, v2)
		if errs := validation.ValidateHPAIntent(in); len(errs) > 0 {
			return
		}
		compiled, err := hpa.Compile(in)
		if err != nil {
			t.Fatalf("Compile refused an intent validation accepts: %v\nintent spec: %+v", err, in.Spec)
		}
		consumers := compiled.Consumers
		if len(consumers) != 1 {
			t.Fatalf("Compile returned %d consumers, want 1", len(consumers))
		}
		status := st.InventoryStatus([]*corev1.Node{fuzzNode.Obj()})
		view := inventory.NewView(&status)
		fits, _ := view.FitsOnOneNode(consumers[0].Request)
		view.MaxReplicas(consumers[0].Request)
		if optional || !fits {
			return
		}
		need, err := in.Spec.Consumers[0].Requirements[1].Resource.EffectiveRequests()
		if err != nil {
			t.Fatalf("EffectiveRequests of a valid amount: %v", err)
		}
		have := fuzzNode.Obj().Status.Allocatable[corev1.ResourceName(resName)]
		if need.Cmp(have) > 0 {
			t.Errorf("A request for %s of %s fits on a node with %s", need.String(), resName, have.String())
		}
	})
}
