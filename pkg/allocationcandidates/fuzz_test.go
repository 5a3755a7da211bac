package allocationcandidates

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// fuzzBudget is the work budget of FuzzEvaluate's queries: a few milliseconds.
const fuzzBudget = 200_000

// FuzzEvaluate answers arbitrary queries over a small fleet: every query is answered, or
// refused with an *Error naming a parameter or a *BudgetError, and none takes more than the
// budget (and what the searches running at once count before they look at it).
func FuzzEvaluate(f *testing.F) {
	for _, s := range []string{
		"resources=cpu:1",
		"resources=VCPU:2,MEMORY_MB:2048&required=HW_CPU_X86_AVX2&limit=3",
		"resources1=cpu:1&resources2=cpu:1&resources3=cpu:1&resources4=cpu:1&resources5=cpu:1&resources6=cpu:1&resources7=cpu:1&group_policy=none",
		"resources1=nvidia.com/gpu:1&required1=nvidia.com/gpu.product=A100&resources2=cpu:4&required2=!fleetfit.io/spot&group_policy=isolate",
		"resources=cpu:1,memory:1Gi,nvidia.com/gpu:1&required=in:fleetfit.io/disk=nvme,fleetfit.io/spot",
		"resources=cpu:1&required=example.com/magic",
		"resources=cpu:1&member_of=east&member_of=!in:west",
	} {
		f.Add(s)
	}
	var nodes []*corev1.Node
	for _, n := range []struct{ name, cpu, gpu, label string }{
		{"cpu-a", "8", "", "fleetfit.io/spot"}, {"cpu-b", "16", "", "fleetfit.io/disk"}, {"cpu-c", "4", "", ""},
		{"gpu-a", "32", "4", "nvidia.com/gpu.product"}, {"cpu-d", "8", "", "feature.node.kubernetes.io/cpu-cpuid.AVX2"},
	} {
		w := ut.MakeNode(n.name).Label(name, n.name).Resource(corev1.ResourceCPU, n.cpu).Resource(corev1.ResourceMemory, "32Gi")
		if n.label != "" {
			w.Label(n.label, "true")
		}
		if n.gpu != "" {
			w.Resource("nvidia.com/gpu", n.gpu).Label("nvidia.com/gpu.product", "A100")
		}
		nodes = append(nodes, w.Obj())
	}
	snap := snapshot(f, map[string]clusterSpec{
		"a": {nodes: nodes, set: "east"}, "b": {nodes: nodes[:3], set: "west"}, "c": {nodes: nodes[2:]},
	})
	lim := Limits{MaxCandidates: 20, WorkBudget: fuzzBudget, Parallelism: 2}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseQuery(raw)
		if err != nil {
			return
		}
		resp, spent, err := evaluate(t.Context(), snap, q, now, lim)
		// A search counts up to flushEvery steps, and one step may weigh a group's classes and
		// traits times a cluster's runs, before it looks at the budget.
		weight := int64(len(raw))*int64(len(nodes)) + emitCost*int64(1+len(q.Groups))
		if most := fuzzBudget + int64(lim.Parallelism)*(flushEvery+weight); spent > most {
			t.Fatalf("%s took %d steps, more than %d", raw, spent, most)
		}
		var bad *Error
		var costly *BudgetError
		switch {
		case errors.As(err, &bad):
			if bad.Parameter == "" {
				t.Fatalf("%s: %v names no parameter", raw, err)
			}
			return
		case errors.As(err, &costly):
			if spent <= fuzzBudget {
				t.Fatalf("%s refused after %d steps, within the budget", raw, spent)
			}
			return
		case err != nil:
			t.Fatalf("%s: %v", raw, err)
		}
		most := lim.MaxCandidates
		if q.Limit > 0 {
			most = min(most, q.Limit)
		}
		if n := len(resp.AllocationRequests); n > most || resp.Truncated != nil && n != lim.MaxCandidates {
			t.Fatalf("%s: %d candidates (truncated: %v), at most %d", raw, n, resp.Truncated, most)
		}
		for _, ar := range resp.AllocationRequests {
			if _, ok := resp.ProviderSummaries[ar.cluster]; !ok {
				t.Fatalf("%s: cluster %s has no summary", raw, ar.cluster)
			}
			for id := range ar.Allocations {
				if _, ok := resp.ProviderSummaries[id]; !ok {
					t.Fatalf("%s: provider %s has no summary", raw, id)
				}
			}
		}
	})
}
