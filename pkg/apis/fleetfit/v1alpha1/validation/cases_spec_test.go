package validation

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// validationCase is one intent with the errors ValidateHPAIntent must return
// for it. TestValidateHPAIntent checks the errors exactly; TestAdmissionAgrees
// checks that the CRD, evaluated as the API server would, finds the same.
type validationCase struct {
	intent *v1alpha1.HPAIntent
	want   field.ErrorList
	// goOnly marks errors the CRD cannot find: admission accepts the intent.
	goOnly bool
}

// validationCases are all the cases, from the spec down to node features.
func validationCases() map[string]validationCase {
	cases := specCases()
	for name, c := range requirementCases() {
		if _, dup := cases[name]; dup {
			panic(fmt.Sprintf("two validation cases named %q", name))
		}
		cases[name] = c
	}
	return cases
}

// Paths of the first consumer, requirement, resource amount and feature.
var (
	specPath      = field.NewPath("spec")
	consumersPath = specPath.Child("consumers")
	consumer0     = consumersPath.Index(0)
	reqs0         = consumer0.Child("requirements")
	req0          = reqs0.Index(0)
	res0          = req0.Child("resource")
	feat0         = req0.Child("feature")
	omit          = field.OmitValueType{}
)

// consumer starts a consumer targeting the Deployment of its own name and its
// container main.
func consumer(name string) *utiltesting.ConsumerWrapper {
	return utiltesting.MakeConsumer(name).Target("Deployment", name, "main")
}

// cpu is a valid resource requirement.
func cpu() v1alpha1.ResourceRequirement {
	return utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()
}

// intentWith is a valid intent but for its consumers.
func intentWith(consumers ...v1alpha1.ResourceConsumer) *utiltesting.HPAIntentWrapper {
	return utiltesting.MakeHPAIntent("web", "ns").Placement("web").Consumer(consumers...)
}

// intentRequiring is a valid intent but for the requirements of its only
// consumer, app.
func intentRequiring(reqs ...v1alpha1.ResourceRequirement) *v1alpha1.HPAIntent {
	return intentWith(consumer("app").Requirement(reqs...).Obj()).Obj()
}

// guaranteed is a consumer with exclusive cores and the given cpu and memory
// requests and limits; an empty string leaves that amount unset.
func guaranteed(cpuRequests, cpuLimits, memRequests, memLimits string) *utiltesting.ConsumerWrapper {
	c := consumer("db").ExclusiveCPU()
	for _, a := range []struct{ name, requests, limits string }{
		{"cpu", cpuRequests, cpuLimits},
		{"memory", memRequests, memLimits},
	} {
		if a.requests == "" && a.limits == "" {
			continue
		}
		r := utiltesting.MakeResource(a.name, a.name)
		if a.requests != "" {
			r.Requests(a.requests)
		}
		if a.limits != "" {
			r.Limits(a.limits)
		}
		c.Requirement(r.Obj())
	}
	return c
}

func specCases() map[string]validationCase {
	emptyConsumers := intentWith().Obj()
	emptyConsumers.Spec.Consumers = []v1alpha1.ResourceConsumer{}
	emptyRequirements := intentWith(consumer("app").Obj()).Obj()
	emptyRequirements.Spec.Consumers[0].Requirements = []v1alpha1.ResourceRequirement{}
	tooManyConsumers := intentWith()
	for i := range maxConsumers + 1 {
		tooManyConsumers.Consumer(consumer(fmt.Sprintf("c%d", i)).Requirement(cpu()).Obj())
	}
	tooManyRequirements := consumer("app")
	for i := range maxRequirements + 1 {
		tooManyRequirements.Requirement(utiltesting.MakeResource(fmt.Sprintf("r%d", i), fmt.Sprintf("example.com/r%d", i)).Requests("1").Obj())
	}
	long := func(n int) string { return strings.Repeat("a", n) }
	rescheduling := func(r v1alpha1.Rescheduling) *v1alpha1.HPAIntent {
		in := intentWith(consumer("app").Requirement(cpu()).Obj()).Obj()
		in.Spec.Rescheduling = &r
		return in
	}
	reschedulingPath := specPath.Child("rescheduling")
	splitPath := specPath.Child("split")
	split := func(sp v1alpha1.ReplicaSplit, consumers ...v1alpha1.ResourceConsumer) *v1alpha1.HPAIntent {
		if len(consumers) == 0 {
			consumers = []v1alpha1.ResourceConsumer{consumer("app").Replicas(10).Requirement(cpu()).Obj()}
		}
		return intentWith(consumers...).Split(sp).Obj()
	}
	zone := metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}
	scaleUp := func(su v1alpha1.ScaleUp) *v1alpha1.HPAIntent {
		in := intentWith(consumer("app").Requirement(cpu()).Obj()).Obj()
		in.Spec.ScaleUp = &su
		return in
	}
	scaleUpPath := specPath.Child("scaleUp")

	return map[string]validationCase{
		"scale-up Never": {
			intent: scaleUp(v1alpha1.ScaleUp{Policy: v1alpha1.ScaleUpNever}),
		},
		"scale-up waiting 30m": {
			intent: scaleUp(v1alpha1.ScaleUp{Policy: v1alpha1.ScaleUpIfNeeded, MaxWait: &metav1.Duration{Duration: 30 * time.Minute}}),
		},
		"scale-up policy unknown": {
			intent: scaleUp(v1alpha1.ScaleUp{Policy: "Always"}),
			want: field.ErrorList{field.NotSupported(scaleUpPath.Child("policy"), v1alpha1.ScaleUpPolicy("Always"),
				[]string{string(v1alpha1.ScaleUpIfNeeded), string(v1alpha1.ScaleUpNever)})},
		},
		"scale-up waiting 10s": {
			intent: scaleUp(v1alpha1.ScaleUp{MaxWait: &metav1.Duration{Duration: 10 * time.Second}}),
			want:   field.ErrorList{field.Invalid(scaleUpPath.Child("maxWait"), "10s", "maxWait must be between 1m and 24h (10m when left out)")},
		},
		"fwall example": {
			// A Go client sends core-fwall's memory, 1000 in units MB, as
			// 1k; TestFwallAsWritten sends it as a person writes it.
			intent: utiltesting.FwallHPAIntent("ns").Obj(),
		},
		"several errors are all reported": {
			intent: intentWith(consumer("app").Replicas(0).Requirement(cpu()).Obj()).Placement("").Obj(),
			want: field.ErrorList{
				field.Invalid(specPath.Child("placementRef", "name"), "", "should be at least 1 chars long"),
				field.Invalid(consumer0.Child("replicas"), int64(0), "should be greater than or equal to 1"),
			},
		},
		"rescheduling Never": {
			intent: rescheduling(v1alpha1.Rescheduling{Policy: v1alpha1.ReschedulingNever}),
		},
		"rescheduling after 2m, 4 moves an hour": {
			intent: rescheduling(v1alpha1.Rescheduling{UnschedulableFor: &metav1.Duration{Duration: 2 * time.Minute}, MaxMovesPerHour: ptr.To[int32](4)}),
		},
		"rescheduling policy unknown": {
			intent: rescheduling(v1alpha1.Rescheduling{Policy: "Always"}),
			want: field.ErrorList{field.NotSupported(reschedulingPath.Child("policy"), v1alpha1.ReschedulingPolicy("Always"),
				[]string{string(v1alpha1.ReschedulingIfUnschedulable), string(v1alpha1.ReschedulingNever)})},
		},
		"rescheduling after 10s": {
			intent: rescheduling(v1alpha1.Rescheduling{UnschedulableFor: &metav1.Duration{Duration: 10 * time.Second}}),
			want: field.ErrorList{field.Invalid(reschedulingPath.Child("unschedulableFor"), "10s",
				"unschedulableFor must be between 30s and 24h: pods wait a little while a node starts or a job ends, so a shorter time moves workloads that would have run (5m when left out)")},
		},
		"rescheduling no moves": {
			intent: rescheduling(v1alpha1.Rescheduling{MaxMovesPerHour: ptr.To[int32](0)}),
			want:   field.ErrorList{field.Invalid(reschedulingPath.Child("maxMovesPerHour"), int64(0), "should be greater than or equal to 1")},
		},
		"split by capacity": {
			intent: split(v1alpha1.ReplicaSplit{MinReplicas: ptr.To[int32](2), AllOrNothing: true}),
		},
		"split by weights": {
			intent: split(v1alpha1.ReplicaSplit{By: v1alpha1.SplitByWeights, Weights: []v1alpha1.ClusterWeight{{ClusterSelector: zone, Weight: 3}, {Weight: 1}}}),
		},
		"split of two containers of one pod": {
			intent: split(v1alpha1.ReplicaSplit{By: v1alpha1.SplitEvenly},
				utiltesting.MakeConsumer("a").Target("StatefulSet", "db", "a").Requirement(cpu()).Obj(),
				utiltesting.MakeConsumer("b").Target("StatefulSet", "db", "b").Requirement(cpu()).Obj()),
		},
		"split of a DaemonSet": {
			intent: split(v1alpha1.ReplicaSplit{}, utiltesting.MakeConsumer("agent").Target("DaemonSet", "agent", "main").Requirement(cpu()).Obj()),
			want:   field.ErrorList{field.Invalid(splitPath, omit, msgSplitKind)},
		},
		"split of two workloads": {
			intent: split(v1alpha1.ReplicaSplit{}, consumer("web").Requirement(cpu()).Obj(), consumer("api").Requirement(cpu()).Obj()),
			want:   field.ErrorList{field.Invalid(splitPath, omit, msgSplitOneObject)},
		},
		"split minimum over the total": {
			intent: split(v1alpha1.ReplicaSplit{MinReplicas: ptr.To[int32](11)}),
			want:   field.ErrorList{field.Invalid(splitPath.Child("minReplicas"), int32(11), msgSplitMinOverSum)},
		},
		"split minimum zero": {
			intent: split(v1alpha1.ReplicaSplit{MinReplicas: ptr.To[int32](0)}),
			want:   field.ErrorList{field.Invalid(splitPath.Child("minReplicas"), int64(0), "should be greater than or equal to 1")},
		},
		"split weights without by Weights": {
			intent: split(v1alpha1.ReplicaSplit{By: v1alpha1.SplitEvenly, Weights: []v1alpha1.ClusterWeight{{ClusterSelector: zone, Weight: 3}}}),
			want:   field.ErrorList{field.Invalid(splitPath, omit, msgSplitWeightsOnly)},
		},
		"split by Weights without weights": {
			intent: split(v1alpha1.ReplicaSplit{By: v1alpha1.SplitByWeights}),
			want:   field.ErrorList{field.Invalid(splitPath, omit, msgSplitNeedWeights)},
		},
		"split weight too large": {
			intent: split(v1alpha1.ReplicaSplit{By: v1alpha1.SplitByWeights, Weights: []v1alpha1.ClusterWeight{{ClusterSelector: zone, Weight: 1001}}}),
			want:   field.ErrorList{field.Invalid(splitPath.Child("weights").Index(0).Child("weight"), int64(1001), "should be less than or equal to 1000")},
		},
		"split by an unknown policy": {
			intent: split(v1alpha1.ReplicaSplit{By: "Random"}),
			want: field.ErrorList{field.NotSupported(splitPath.Child("by"), v1alpha1.SplitPolicy("Random"),
				[]string{string(v1alpha1.SplitByCapacity), string(v1alpha1.SplitEvenly), string(v1alpha1.SplitByWeights)})},
		},
		"placement name too long": {
			intent: intentWith(consumer("app").Requirement(cpu()).Obj()).Placement(long(254)).Obj(),
			want:   field.ErrorList{field.TooLong(specPath.Child("placementRef", "name"), "", 253)},
		},
		// An intent is built step by step through EMCO's API: without
		// consumers, or with a consumer without requirements, it is accepted
		// and the hub reports it incomplete (Valid=False, Incomplete).
		"no consumers": {
			intent: intentWith().Obj(),
		},
		"empty consumers": {
			intent: emptyConsumers,
		},
		"too many consumers": {
			intent: tooManyConsumers.Obj(),
			want:   field.ErrorList{field.TooMany(consumersPath, 33, 32)},
		},
		"consumer names repeat": {
			intent: intentWith(
				consumer("app").Requirement(cpu()).Obj(),
				consumer("app").Requirement(cpu()).Obj(),
				consumer("app").Requirement(cpu()).Obj(),
				consumer("db").Requirement(cpu()).Obj(),
			).Obj(),
			want: field.ErrorList{field.Duplicate(consumersPath.Index(1).Child("name"), "app")},
		},
		"consumer without name": {
			intent: intentWith(utiltesting.MakeConsumer("").Target("Deployment", "app", "main").Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("name"), "", "should be at least 1 chars long")},
		},
		"consumer name too long": {
			intent: intentWith(utiltesting.MakeConsumer(long(64)).Target("Deployment", "app", "main").Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.TooLong(consumer0.Child("name"), "", 63)},
		},
		"replicas 3": {
			intent: intentWith(consumer("app").Replicas(3).Requirement(cpu()).Obj()).Obj(),
		},
		"target kind not supported": {
			intent: intentWith(consumer("app").Target("Service", "app", "main").Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.NotSupported(consumer0.Child("target", "kind"), "Service", targetKinds)},
		},
		"target without kind": {
			intent: intentWith(consumer("app").Target("", "app", "main").Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.NotSupported(consumer0.Child("target", "kind"), "", targetKinds)},
		},
		"every target kind": {
			intent: intentWith(
				consumer("a").Target("Deployment", "a", "main").Requirement(cpu()).Obj(),
				consumer("b").Target("StatefulSet", "b", "main").Requirement(cpu()).Obj(),
				consumer("c").Target("DaemonSet", "c", "main").Requirement(cpu()).Obj(),
				consumer("d").Target("ReplicaSet", "d", "main").Requirement(cpu()).Obj(),
				consumer("e").Target("Job", "e", "main").Requirement(cpu()).Obj(),
				consumer("f").Target("CronJob", "f", "main").Requirement(cpu()).Obj(),
				consumer("g").Target("Pod", "g", "main").Requirement(cpu()).Obj(),
			).Obj(),
		},
		"target without apiVersion": {
			intent: intentWith(consumer("app").TargetAPIVersion("").Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("target", "apiVersion"), "", "should be at least 1 chars long")},
		},
		"target without name": {
			intent: intentWith(consumer("app").Target("Deployment", "", "main").Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("target", "name"), "", "should be at least 1 chars long")},
		},
		"target name too long": {
			intent: intentWith(consumer("app").Target("Deployment", long(254), "main").Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.TooLong(consumer0.Child("target", "name"), "", 253)},
		},
		"container name too long": {
			intent: intentWith(consumer("app").Target("Deployment", "app", long(64)).Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.TooLong(consumer0.Child("target", "container"), "", 63)},
		},
		"no container for resources": {
			intent: intentWith(consumer("app").Target("Deployment", "app", "").Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.Required(consumer0.Child("target", "container"), msgContainerRequired)},
		},
		"no container needed for features only": {
			intent: intentWith(consumer("app").Target("Deployment", "app", "").
				Requirement(utiltesting.MakeFeature("avx", "feature.node.kubernetes.io/cpu-cpuid.AVX512F").Values("true").Obj()).Obj()).Obj(),
		},
		"zero replicas": {
			intent: intentWith(consumer("app").Replicas(0).Requirement(cpu()).Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("replicas"), int64(0), "should be greater than or equal to 1")},
		},
		"no requirements": {
			intent: intentWith(consumer("app").Obj()).Obj(),
		},
		"empty requirements": {
			intent: emptyRequirements,
		},
		"exclusiveCPU without requirements": {
			intent: intentWith(consumer("app").ExclusiveCPU().Obj()).Obj(),
			want: field.ErrorList{
				field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveCPU),
				field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveMemory),
			},
		},
		"too many requirements": {
			intent: intentWith(tooManyRequirements.Obj()).Obj(),
			want:   field.ErrorList{field.TooMany(reqs0, 33, 32)},
		},
		"requirement names repeat": {
			intent: intentRequiring(cpu(), utiltesting.MakeResource("mem", "memory").Requests("1Gi").Obj(),
				utiltesting.MakeResource("cpu", "ephemeral-storage").Requests("1Gi").Obj()),
			want: field.ErrorList{field.Duplicate(reqs0.Index(2).Child("name"), "cpu")},
		},
		"two mandatory amounts of one resource": {
			intent: intentRequiring(cpu(), utiltesting.MakeResource("mem", "memory").Requests("1Gi").Obj(), utiltesting.MakeResource("cpu-again", "cpu").Requests("2").Obj()),
			want:   field.ErrorList{field.Invalid(reqs0.Index(2).Child("resource", "name"), "cpu", msgOneAmountPerResource)},
		},
		"a mandatory and an optional amount of one resource": {
			intent: intentRequiring(cpu(), utiltesting.MakeResource("more-cpu", "cpu").Requests("4").Mandatory(false).Weight(5).Obj()),
		},
		"the same requirement name in two consumers": {
			intent: intentWith(consumer("a").Requirement(cpu()).Obj(), consumer("b").Requirement(cpu()).Obj()).Obj(),
		},
		"exclusiveCPU with whole cores and Guaranteed memory": {
			intent: intentWith(guaranteed("2", "2", "1Gi", "1024Mi").Obj()).Obj(),
		},
		"exclusiveCPU with limits only": {
			intent: intentWith(guaranteed("", "2", "", "1Gi").Obj()).Obj(),
		},
		"exclusiveCPU with 2000m cores": {
			intent: intentWith(guaranteed("2000m", "2000m", "1Gi", "1Gi").Obj()).Obj(),
		},
		"exclusiveCPU with memory in legacy units": {
			intent: intentWith(guaranteed("2", "2", "", "").
				Requirement(utiltesting.MakeResource("memory", "memory").Requests("512").Limits("512").Units("MiB").Obj()).Obj()).Obj(),
		},
		"exclusiveCPU with part of a core": {
			intent: intentWith(guaranteed("1500m", "1500m", "1Gi", "1Gi").Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveCPU)},
		},
		"exclusiveCPU with cpu requests below limits": {
			intent: intentWith(guaranteed("1", "2", "1Gi", "1Gi").Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveCPU)},
		},
		"exclusiveCPU without cpu limits": {
			intent: intentWith(guaranteed("2", "", "1Gi", "1Gi").Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveCPU)},
		},
		"exclusiveCPU with optional cpu": {
			intent: intentWith(consumer("db").ExclusiveCPU().Requirement(
				utiltesting.MakeResource("cpu", "cpu").Requests("2").Limits("2").Mandatory(false).Obj(),
				utiltesting.MakeResource("memory", "memory").Limits("1Gi").Obj(),
			).Obj()).Obj(),
			want: field.ErrorList{field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveCPU)},
		},
		"exclusiveCPU with memory requests below limits": {
			intent: intentWith(guaranteed("2", "2", "1Gi", "2Gi").Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveMemory)},
		},
		"exclusiveCPU without memory": {
			intent: intentWith(guaranteed("2", "2", "", "").Obj()).Obj(),
			want:   field.ErrorList{field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveMemory)},
		},
		"exclusiveCPU with features only": {
			intent: intentWith(consumer("db").ExclusiveCPU().
				Requirement(utiltesting.MakeFeature("avx", "feature.node.kubernetes.io/cpu-cpuid.AVX512F").Values("true").Obj()).Obj()).Obj(),
			want: field.ErrorList{
				field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveCPU),
				field.Invalid(consumer0.Child("exclusiveCPU"), true, msgExclusiveMemory),
			},
		},
	}
}
