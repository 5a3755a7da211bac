package apis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// TestMachineTypeResourcesAreBounded sends MachineGroups to a managed cluster's
// API server with each machine type's cpu and memory spelt as a person would
// write them (a typed client would send their canonical form), and checks that
// a type is admitted only with more than none and at most what fleetfit can
// count of each, and that a refusal names the field.
func TestMachineTypeResourcesAreBounded(t *testing.T) {
	const (
		msgCPU      = "cpu must be more than 0 and at most 9223372036854775 cores, the most fleetfit can count"
		msgMemory   = "memory must be more than 0 and at most 9223372036854775 bytes (about 8 PiB), the most fleetfit can count"
		msgNegative = "cpu and memory must not be negative"
		msgExponent = "write cpu and memory with an exponent of at most three digits"
		cpuField    = "spec.machineTypes[0].spec.cpu"
		memoryField = "spec.machineTypes[0].spec.memory"
		specField   = "spec.machineTypes[0].spec"
	)
	groups := dynamic.NewForConfigOrDie(fleet.Spokes[0].AdminConfig()).Resource(
		schema.GroupVersionResource{Group: v1alpha1.GroupName, Version: "v1alpha1", Resource: "machinegroups"})

	cases := map[string]struct {
		cpu, memory any
		// want are the refusal's causes as "field: part of the message", in
		// order; none for a group the API server must admit.
		want []string
	}{
		"a machine":                         {cpu: "40", memory: "128Gi"},
		"whole numbers as JSON numbers":     {cpu: 4, memory: 1073741824},
		"the least of each":                 {cpu: "1m", memory: "1"},
		"the most of each":                  {cpu: "9223372036854775", memory: "9223372036854775"},
		"the most written with an exponent": {cpu: "9.223372036854775e15", memory: "8Pi"},
		"no cpu":                            {cpu: "0", memory: "4Gi", want: []string{cpuField + ": " + msgCPU}},
		"no memory":                         {cpu: "4", memory: "0", want: []string{memoryField + ": " + msgMemory}},
		"neither":                           {cpu: "0", memory: "0", want: []string{cpuField + ": " + msgCPU, memoryField + ": " + msgMemory}},
		"none as a JSON number":             {cpu: 0, memory: "4Gi", want: []string{cpuField + ": " + msgCPU}},
		"none in other spellings":           {cpu: "0m", memory: "0.0Gi", want: []string{cpuField + ": " + msgCPU, memoryField + ": " + msgMemory}},
		"none with an exponent":             {cpu: "0e5", memory: "4Gi", want: []string{cpuField + ": " + msgCPU}},
		"cpu of 1e999":                      {cpu: "1e999", memory: "4Gi", want: []string{cpuField + ": " + msgCPU}},
		"memory of 1e999":                   {cpu: "4", memory: "1e999", want: []string{memoryField + ": " + msgMemory}},
		"one core more than the most": {
			cpu: "9223372036854776", memory: "4Gi", want: []string{cpuField + ": " + msgCPU},
		},
		"memory of 9Pi": {cpu: "4", memory: "9Pi", want: []string{memoryField + ": " + msgMemory}},
		// Negative amounts and long exponents keep the messages that say more about them.
		"negative cpu":          {cpu: "-1", memory: "4Gi", want: []string{specField + ": " + msgNegative}},
		"negative zero":         {cpu: "-0", memory: "4Gi", want: []string{specField + ": " + msgNegative}},
		"a four-digit exponent": {cpu: "1e1000", memory: "4Gi", want: []string{specField + ": " + msgExponent}},
	}
	i := 0
	for name, tc := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			group := fmt.Sprintf("bounds-%d", i)
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "MachineGroup",
				"metadata": map[string]any{"name": group},
				"spec": map[string]any{"machineTypes": []any{map[string]any{
					"name": "medium", "available": int64(1),
					"spec": map[string]any{"cpu": tc.cpu, "memory": tc.memory},
				}}},
			}}
			_, err := groups.Create(t.Context(), obj, metav1.CreateOptions{})
			if err == nil {
				t.Cleanup(func() { _ = groups.Delete(context.Background(), group, metav1.DeleteOptions{}) })
			}
			if diff := cmp.Diff(tc.want, refusals(t, err, tc.want)); diff != "" {
				t.Errorf("cpu %v, memory %v: refused for (-want,+got):\n%s", tc.cpu, tc.memory, diff)
			}
		})
	}
}

// refusals lists the causes of an API server's refusal as "field: message",
// sorted, each cut to the want it contains (so that a test names the part of
// a message it cares about); nil when err is nil.
func refusals(t *testing.T, err error, want []string) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("not a refusal with causes: %v", err)
	}
	var got []string
	for _, c := range status.Status().Details.Causes {
		cause := c.Field + ": " + c.Message
		for _, w := range want {
			field, message, _ := strings.Cut(w, ": ")
			if c.Field == field && strings.Contains(c.Message, message) {
				cause = w
				break
			}
		}
		got = append(got, cause)
	}
	slices.Sort(got)
	return got
}
