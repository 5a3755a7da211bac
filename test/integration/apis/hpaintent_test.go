package apis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1/validation"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestHPAIntentAdmission sends invalid HPAIntents to the real hub API server
// and checks that each is refused with a message that says what is wrong —
// the same message fleetfit's Go validation gives offline — while EMCO's
// examples are stored with their defaults.
func TestHPAIntentAdmission(t *testing.T) {
	ctx := t.Context()
	ns := createNamespace(t, "admission")
	intents := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(ns)

	fwall := func() *v1alpha1.HPAIntent { return ut.FwallHPAIntent(ns).Obj() }
	core := func(i *v1alpha1.HPAIntent) *v1alpha1.ResourceConsumer { return &i.Spec.Consumers[0] }
	requirement := func(i *v1alpha1.HPAIntent, name string) *v1alpha1.ResourceRequirement {
		for j := range core(i).Requirements {
			if core(i).Requirements[j].Name == name {
				return &core(i).Requirements[j]
			}
		}
		t.Fatalf("fwall has no requirement %q", name)
		return nil
	}
	withFeature := func(f v1alpha1.FeatureRequirement) *v1alpha1.HPAIntent {
		i := fwall()
		core(i).Requirements = append(core(i).Requirements, v1alpha1.ResourceRequirement{Name: "feature", Feature: &f})
		return i
	}

	cases := map[string]struct {
		intent *v1alpha1.HPAIntent
		// wantMessage is what the API server must say; the Go validator
		// must say it too unless apiOnly is set (schema wording such as
		// list sizes differs in form, not in substance).
		wantMessage string
		apiOnly     bool
	}{
		"resource and feature in one requirement": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				requirement(i, "cpu").Feature = &v1alpha1.FeatureRequirement{Key: "feature.node.kubernetes.io/cpu-cpuid.AVX512F", Operator: corev1.NodeSelectorOpExists}
				return i
			}(),
			wantMessage: "set exactly one of resource (an amount to have free on a node), feature (a node label requirement), machineType (a machine of a MachineGroup's type for each replica) or devices (DRA devices on the node)",
		},
		"two mandatory amounts of one resource": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				core(i).Requirements = append(core(i).Requirements, v1alpha1.ResourceRequirement{Name: "cpu-again",
					Resource: &v1alpha1.ResourceAmount{Name: "cpu", Requests: ptr.To(resource.MustParse("1"))}})
				return i
			}(),
			wantMessage: "two mandatory requirements ask for amounts of the same resource, but a container has one request and one limit per resource; keep one of them, or make the other optional",
		},
		"neither resource nor feature": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				core(i).Requirements = append(core(i).Requirements, v1alpha1.ResourceRequirement{Name: "empty"})
				return i
			}(),
			wantMessage: "set exactly one of resource",
		},
		"requests above limits": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				i.Spec.Consumers[1].Requirements[0].Resource.Requests = ptr.To(resource.MustParse("3"))
				return i
			}(),
			wantMessage: "requests (3) must not exceed limits (2)",
		},
		"negative limits": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				requirement(i, "gpu").Resource.Limits = ptr.To(resource.MustParse("-1"))
				return i
			}(),
			wantMessage: "requests and limits must not be negative",
		},
		"weight on a mandatory requirement": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				requirement(i, "cpu").Weight = ptr.To[int32](5)
				return i
			}(),
			wantMessage: "weight ranks optional requirements only: set mandatory: false, or remove weight",
		},
		"weight above 10": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				requirement(i, "gpu").Weight = ptr.To[int32](11)
				return i
			}(),
			wantMessage: "should be less than or equal to 10",
		},
		"Exists with values": {
			intent:      withFeature(v1alpha1.FeatureRequirement{Key: "feature.node.kubernetes.io/cpu-cpuid.AVX512F", Operator: corev1.NodeSelectorOpExists, Values: []string{"true"}}),
			wantMessage: "operator Exists takes no values",
		},
		"DoesNotExist with a value": {
			intent:      withFeature(v1alpha1.FeatureRequirement{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpDoesNotExist, Value: "A100"}),
			wantMessage: "value is shorthand for operator In; with other operators use values",
		},
		"Gt with a word": {
			intent:      withFeature(v1alpha1.FeatureRequirement{Key: "nvidia.com/gpu.memory", Operator: corev1.NodeSelectorOpGt, Values: []string{"lots"}}),
			wantMessage: `operator Gt takes exactly one integer value, e.g. values: ["8"]`,
		},
		"Lt with two values": {
			intent:      withFeature(v1alpha1.FeatureRequirement{Key: "nvidia.com/gpu.memory", Operator: corev1.NodeSelectorOpLt, Values: []string{"8", "16"}}),
			wantMessage: "operator Lt takes exactly one integer value",
		},
		"NotIn without values": {
			intent:      withFeature(v1alpha1.FeatureRequirement{Key: "nvidia.com/gpu.product", Operator: corev1.NodeSelectorOpNotIn}),
			wantMessage: "operator NotIn needs at least one value",
		},
		"value and values": {
			intent:      withFeature(v1alpha1.FeatureRequirement{Key: "nvidia.com/gpu.product", Value: "A100", Values: []string{"H100"}}),
			wantMessage: "set value (EMCO's shorthand for operator In with one value) or values, not both",
		},
		"no container for resource requirements": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				i.Spec.Consumers[1].Target.Container = ""
				return i
			}(),
			wantMessage: "target.container is required when the consumer has resource requirements",
		},
		"exclusiveCPU with fractional cores": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				r := requirement(i, "cpu").Resource
				r.Requests, r.Limits = ptr.To(resource.MustParse("3500m")), ptr.To(resource.MustParse("3500m"))
				return i
			}(),
			wantMessage: "exclusiveCPU needs a mandatory cpu requirement with whole cores and requests equal to limits (Guaranteed QoS)",
		},
		"exclusiveCPU with memory requests below limits": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				requirement(i, "memory").Resource.Requests = ptr.To(resource.MustParse("500"))
				return i
			}(),
			wantMessage: "exclusiveCPU needs a mandatory memory requirement with requests equal to limits (Guaranteed QoS)",
		},
		"legacy units with a fraction": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				i.Spec.Consumers[1].Requirements[1].Resource.Requests = ptr.To(resource.MustParse("200.5"))
				return i
			}(),
			wantMessage: "with units, requests and limits are whole numbers of that unit",
		},
		"cpu 1e19": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				requirement(i, "cpu").Resource.Requests = ptr.To(resource.MustParse("1e19"))
				requirement(i, "cpu").Resource.Limits = ptr.To(resource.MustParse("1e19"))
				return i
			}(),
			wantMessage: "spec.consumers[0].requirements[0].resource.requests: Invalid value: " +
				"must be at most 9223372036854775, the largest amount fleetfit can count",
			// Go names the value it refuses, which the CEL rule cannot.
			apiOnly: true,
		},
		"nvidia.com/gpu 1e19 in limits alone": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				requirement(i, "gpu").Resource.Limits = ptr.To(resource.MustParse("1e19"))
				return i
			}(),
			wantMessage: "must be at most 9223372036854775, the largest amount fleetfit can count",
		},
		"1e300 with units TiB": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				i.Spec.Consumers[1].Requirements[1].Resource.Requests = ptr.To(resource.MustParse("1e300"))
				i.Spec.Consumers[1].Requirements[1].Resource.Units = "TiB"
				return i
			}(),
			wantMessage: "must be at most 8388 with units TiB",
		},
		"cpu 1e709551616, which the API server would take minutes to compare": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				i.Spec.Consumers[1].Requirements[0].Resource.Limits = ptr.To(resource.MustParse("1e709551616"))
				return i
			}(),
			wantMessage: "write requests and limits with an exponent of at most three digits",
		},
		"Gt beyond int64": {
			intent: withFeature(v1alpha1.FeatureRequirement{Key: "nvidia.com/gpu.memory", Operator: corev1.NodeSelectorOpGt, Values: []string{"99999999999999999999"}}),
			wantMessage: "operator Gt compares 64-bit integers, from -9223372036854775808 to 9223372036854775807, as node affinity does; " +
				"99999999999999999999 is out of range",
		},
		"duplicate consumer names": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				i.Spec.Consumers[1].Name = i.Spec.Consumers[0].Name
				return i
			}(),
			wantMessage: "Duplicate value",
		},
		"duplicate requirement names": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				requirement(i, "gpu").Name = "cpu"
				return i
			}(),
			wantMessage: "Duplicate value",
		},
		"unsupported target kind": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				core(i).Target.Kind = "Service"
				return i
			}(),
			wantMessage: `Unsupported value: "Service"`,
		},
		"no placement": {
			intent: func() *v1alpha1.HPAIntent {
				i := fwall()
				i.Spec.PlacementRef.Name = ""
				return i
			}(),
			wantMessage: "spec.placementRef.name",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.intent.Name = "invalid-" + strings.ToLower(strings.NewReplacer(" ", "-", "/", "-").Replace(name))
			_, err := intents.Create(ctx, tc.intent, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("API server: got %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tc.wantMessage) {
				t.Errorf("API server said %q, want it to contain %q", err.Error(), tc.wantMessage)
			}
			goErrs := validation.ValidateHPAIntent(tc.intent)
			if len(goErrs) == 0 {
				t.Fatalf("Go validation accepts what the API server refuses: %v", err)
			}
			if !tc.apiOnly && !strings.Contains(goErrs.ToAggregate().Error(), tc.wantMessage) {
				t.Errorf("Go validation said %q, want it to contain %q", goErrs.ToAggregate().Error(), tc.wantMessage)
			}
		})
	}

	// EMCO's API builds an intent step by step: the API server stores each step, and the hub
	// calls it Incomplete until its consumers have requirements.
	t.Run("incomplete intents are accepted", func(t *testing.T) {
		noConsumers := fwall()
		noConsumers.Name = "no-consumers"
		noConsumers.Spec.Consumers = nil
		emptyConsumers := fwall()
		emptyConsumers.Name = "empty-consumers"
		emptyConsumers.Spec.Consumers = []v1alpha1.ResourceConsumer{}
		noRequirements := fwall()
		noRequirements.Name = "no-requirements"
		core(noRequirements).Requirements = nil
		core(noRequirements).ExclusiveCPU = false
		for _, in := range []*v1alpha1.HPAIntent{noConsumers, emptyConsumers, noRequirements} {
			if errs := validation.ValidateHPAIntent(in); len(errs) > 0 {
				t.Errorf("Go validation refuses %s: %v", in.Name, errs)
			}
			if _, err := intents.Create(ctx, in, metav1.CreateOptions{}); err != nil {
				t.Errorf("API server refuses %s: %v", in.Name, err)
			}
		}
	})

	t.Run("fwall is stored with its defaults", func(t *testing.T) {
		in := fwall()
		if errs := validation.ValidateHPAIntent(in); len(errs) > 0 {
			t.Fatalf("Go validation refuses fwall: %v", errs)
		}
		got, err := intents.Create(ctx, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating fwall: %v", err)
		}
		want := in.Spec.DeepCopy()
		for c := range want.Consumers {
			for r := range want.Consumers[c].Requirements {
				if want.Consumers[c].Requirements[r].Mandatory == nil {
					want.Consumers[c].Requirements[r].Mandatory = ptr.To(true)
				}
			}
		}
		if diff := cmp.Diff(*want, got.Spec); diff != "" {
			t.Errorf("stored spec (-want,+got):\n%s", diff)
		}
	})

	t.Run("features default to operator In", func(t *testing.T) {
		in := withFeature(v1alpha1.FeatureRequirement{Key: "feature.node.kubernetes.io/cpu-cpuid.AVX512F", Value: "true"})
		in.Name = "fwall-avx512"
		got, err := intents.Create(ctx, in, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating an intent with EMCO's {key, value} feature: %v", err)
		}
		f := got.Spec.Consumers[0].Requirements[len(got.Spec.Consumers[0].Requirements)-1].Feature
		if f.Operator != corev1.NodeSelectorOpIn {
			t.Errorf("operator = %q, want In", f.Operator)
		}
	})
}

// createNamespace creates a namespace named after the test's prefix and
// removes it when the test ends.
func createNamespace(t *testing.T, prefix string) string {
	t.Helper()
	admin := fleet.Hub.AdminClient()
	ns, err := admin.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(fmt.Errorf("creating namespace: %w", err))
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// TestExampleIntentsAreAccepted applies the examples under deploy/examples
// as a user would (YAML, integers as EMCO writes them) and checks that both
// Go validation and the API server accept them.
func TestExampleIntentsAreAccepted(t *testing.T) {
	paths, err := filepath.Glob("../../../deploy/examples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples found (%v)", err)
	}
	client := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1()
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			ns := createNamespace(t, "examples")
			intents := client.HPAIntents(ns)
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// An example file may hold other objects too (a fleet file does): check every
			// HPAIntent of it.
			reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
			found := 0
			for {
				doc, err := reader.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				var meta metav1.TypeMeta
				if err := yaml.Unmarshal(doc, &meta); err != nil || meta.Kind != "HPAIntent" {
					continue
				}
				found++
				intent := &v1alpha1.HPAIntent{}
				if err := yaml.UnmarshalStrict(doc, intent); err != nil {
					t.Fatalf("decoding: %v", err)
				}
				intent.Namespace = ns
				if errs := validation.ValidateHPAIntent(intent); len(errs) > 0 {
					t.Errorf("Go validation of %s: %v", intent.Name, errs.ToAggregate())
				}
				if _, err := intents.Create(t.Context(), intent, metav1.CreateOptions{}); err != nil {
					t.Errorf("API server, %s: %v", intent.Name, err)
				}
			}
			if found == 0 {
				t.Errorf("%s holds no HPAIntent", path)
			}
		})
	}
}
