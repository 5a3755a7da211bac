package hardwarefit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestFilter(t *testing.T) {
	busy := nodes("busy", 1, cpuNode("8"))
	tests := map[string]struct {
		clusters []cluster
		intents  []*fleetfitv1alpha1.HPAIntent
		decided  []string
		// candidates defaults to every cluster.
		candidates  []string
		want        []string
		wantReasons map[string]string
		wantCode    framework.Code
		wantMessage string
	}{
		"no intents: every candidate passes, even without inventory": {
			clusters: []cluster{{name: "bare"}, reporting("small", nodes("n", 1, cpuNode("1")))},
			want:     []string{"bare", "small"},
		},
		"only candidates are checked": {
			clusters:   []cluster{reporting("a", nodes("n", 1, cpuNode("8"))), reporting("b", nodes("n", 1, cpuNode("8")))},
			intents:    []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "1"))},
			candidates: []string{"b"},
			want:       []string{"b"},
		},
		"a cluster without inventory is rejected": {
			clusters: []cluster{{name: "bare"}, reporting("agent", nodes("n", 1, cpuNode("8")))},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "1"))},
			want:     []string{"agent"},
			wantReasons: map[string]string{
				"bare": NoInventory,
			},
		},
		"an inventory older than InventoryStaleAfter is rejected": {
			clusters: []cluster{
				reportingAt("stale", now.Add(-framework.InventoryStaleAfter-time.Second), nodes("n", 1, cpuNode("8"))),
				reportingAt("limit", now.Add(-framework.InventoryStaleAfter), nodes("n", 1, cpuNode("8"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "1"))},
			want:    []string{"limit"},
			wantReasons: map[string]string{
				"stale": "the ClusterInventory is 10m1s old (more than 10m0s): not chosen anew until the fleetfit agent reports again (is it running, and can it reach the hub?)",
			},
		},
		"fragmentation: 80 free cores on 8-core nodes take no 12-core replica": {
			clusters: []cluster{
				reporting("many-small", nodes("n", 10, cpuNode("8"))),
				reporting("few-large", nodes("n", 2, cpuNode("16"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("db", 1, "12"))},
			want:    []string{"few-large"},
			wantReasons: map[string]string{
				"many-small": "consumer app/db: no schedulable node has 12 cpu free; the best has 8",
			},
		},
		"20 replicas of 5 cores need 20 nodes of 8": {
			clusters: []cluster{
				reporting("nineteen", nodes("n", 19, cpuNode("8"))),
				reporting("twenty", nodes("n", 20, cpuNode("8"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 20, "5"))},
			want:    []string{"twenty"},
			wantReasons: map[string]string{
				"nineteen": "consumer app/web: only 19 of 20 replicas fit on the cluster's nodes",
			},
		},
		"a required feature: In": {
			clusters: []cluster{
				reporting("a100", nodes("n", 1, gpuNode("A100"))),
				reporting("t4", nodes("n", 1, gpuNode("T4"))),
				reporting("cpu", nodes("n", 1, cpuNode("32"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("train", 1, "1").
				Requirement(feature(gpuProduct, corev1.NodeSelectorOpIn, "A100")))},
			want: []string{"a100"},
			wantReasons: map[string]string{
				"t4":  "consumer app/train: no schedulable node with nvidia.com/gpu.product In [A100]",
				"cpu": "consumer app/train: no schedulable node with nvidia.com/gpu.product In [A100]",
			},
		},
		"a forbidden feature: NotIn passes nodes without the label": {
			clusters: []cluster{
				reporting("a100", nodes("n", 1, gpuNode("A100"))),
				reporting("t4", nodes("n", 1, gpuNode("T4"))),
				reporting("cpu", nodes("n", 1, cpuNode("32"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("train", 1, "1").
				Requirement(feature(gpuProduct, corev1.NodeSelectorOpNotIn, "T4")))},
			want: []string{"a100", "cpu"},
			wantReasons: map[string]string{
				"t4": "consumer app/train: no schedulable node with nvidia.com/gpu.product NotIn [T4]",
			},
		},
		"a forbidden feature: DoesNotExist": {
			clusters: []cluster{
				reporting("a100", nodes("n", 1, gpuNode("A100"))),
				reporting("cpu", nodes("n", 1, cpuNode("32"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "1").
				Requirement(feature(gpuProduct, corev1.NodeSelectorOpDoesNotExist)))},
			want: []string{"cpu"},
			wantReasons: map[string]string{
				"a100": "consumer app/web: no schedulable node with nvidia.com/gpu.product DoesNotExist",
			},
		},
		"two consumers that fit alone but not together": {
			clusters: []cluster{
				reporting("one-node", nodes("n", 1, cpuNode("8"))),
				reporting("two-nodes", nodes("n", 2, cpuNode("8"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 2, "3"), consumer("db", 1, "4"))},
			want:    []string{"two-nodes"},
			wantReasons: map[string]string{
				"one-node": "consumer app/db: no node has room left for a replica once other consumers and in-flight placements are counted",
			},
		},
		"consumers of two intents count together": {
			clusters: []cluster{
				reporting("one-node", nodes("n", 1, cpuNode("8"))),
				reporting("two-nodes", nodes("n", 2, cpuNode("8"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{
				intent(consumer("web", 2, "3")),
				st.MakeHPAIntent("batch", "ns").Placement("p").Consumer(consumer("job", 1, "4").Obj()).Obj(),
			},
			want: []string{"two-nodes"},
			wantReasons: map[string]string{
				"one-node": "consumer batch/job: no node has room left for a replica once other consumers and in-flight placements are counted",
			},
		},
		"GPU nodes tainted nvidia.com/gpu:NoSchedule take GPU consumers only": {
			clusters: []cluster{
				reporting("gpu", nodes("n", 2, gpuNode("A100").Taint(gpu, "", corev1.TaintEffectNoSchedule))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(gpuConsumer("train", 2))},
			want:    []string{"gpu"},
		},
		"GPU nodes tainted nvidia.com/gpu:NoSchedule reject CPU consumers": {
			clusters: []cluster{
				reporting("gpu", nodes("n", 2, gpuNode("A100").Taint(gpu, "", corev1.TaintEffectNoSchedule))),
				reporting("mixed", append(nodes("g", 2, gpuNode("A100").Taint(gpu, "", corev1.TaintEffectNoSchedule)),
					nodes("c", 1, cpuNode("8"))...)),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "4"))},
			want:    []string{"mixed"},
			wantReasons: map[string]string{
				"gpu": "consumer app/web: every schedulable node has a taint the request does not tolerate, e.g. nvidia.com/gpu:NoSchedule",
			},
		},
		"a decided cluster keeps passing when full": {
			clusters: []cluster{
				reporting("full-decided", busy, pod("busy", "busy-0", "8")),
				reporting("full-fresh", busy, pod("busy", "busy-0", "8")),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 2, "4"))},
			decided: []string{"full-decided"},
			want:    []string{"full-decided"},
			wantReasons: map[string]string{
				"full-fresh": "consumer app/web: no schedulable node has 4 cpu free; the best has 0",
			},
		},
		"a new intent checks the decided clusters in full": {
			clusters: []cluster{
				reporting("full-decided", busy, pod("busy", "busy-0", "8")),
				reportingAt("silent-decided", now.Add(-time.Hour), nodes("n", 1, cpuNode("8"))),
				reporting("room", nodes("n", 1, cpuNode("8"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{newIntent(consumer("web", 2, "4"))},
			decided: []string{"full-decided", "silent-decided"},
			want:    []string{"room"},
			wantReasons: map[string]string{
				"full-decided":   "consumer app/web: no schedulable node has 4 cpu free; the best has 0",
				"silent-decided": "the ClusterInventory is 1h0m0s old (more than 10m0s): not chosen anew until the fleetfit agent reports again (is it running, and can it reach the hub?)",
			},
		},
		"a decided cluster whose nodes lost the required feature is rejected": {
			clusters: []cluster{
				reporting("a100", nodes("n", 1, gpuNode("A100"))),
				reporting("now-t4", nodes("n", 1, gpuNode("T4"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("train", 1, "1").
				Requirement(feature(gpuProduct, corev1.NodeSelectorOpIn, "A100")))},
			decided: []string{"a100", "now-t4"},
			want:    []string{"a100"},
			wantReasons: map[string]string{
				"now-t4": "consumer app/train: no schedulable node with nvidia.com/gpu.product In [A100]",
			},
		},
		"a decided cluster keeps passing when its inventory is stale, with features from the last report": {
			clusters: []cluster{
				reportingAt("silent-a100", now.Add(-time.Hour), nodes("n", 1, gpuNode("A100"))),
				reportingAt("silent-t4", now.Add(-time.Hour), nodes("n", 1, gpuNode("T4"))),
				reportingAt("silent-new", now.Add(-time.Hour), nodes("n", 1, gpuNode("A100"))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("train", 1, "1").
				Requirement(feature(gpuProduct, corev1.NodeSelectorOpIn, "A100")))},
			decided: []string{"silent-a100", "silent-t4"},
			want:    []string{"silent-a100"},
			wantReasons: map[string]string{
				"silent-t4":  "consumer app/train: no schedulable node with nvidia.com/gpu.product In [A100]",
				"silent-new": "the ClusterInventory is 1h0m0s old (more than 10m0s): not chosen anew until the fleetfit agent reports again (is it running, and can it reach the hub?)",
			},
		},
		"a decided cluster without inventory is rejected": {
			clusters: []cluster{{name: "bare"}},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "1"))},
			decided:  []string{"bare"},
			wantReasons: map[string]string{
				"bare": NoInventory,
			},
		},
		"reservations: another placement's active one is subtracted, expired and own ones are not": {
			// Each cluster has room for two 4-core pods.
			clusters: []cluster{
				reporting("other", nodes("n", 1, cpuNode("8"))).reserving(reservation(t, "ns/other", now.Add(time.Minute))),
				reporting("expired", nodes("n", 1, cpuNode("8"))).reserving(reservation(t, "ns/other", now)),
				reporting("own", nodes("n", 1, cpuNode("8"))).reserving(reservation(t, placementKey, now.Add(time.Minute))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 2, "4"))},
			want:    []string{"expired", "own"},
			wantReasons: map[string]string{
				"other": "consumer app/web: only 1 of 2 replicas fit on the cluster's nodes",
			},
		},
		"reservations: another placement's active one leaves room for one": {
			clusters: []cluster{
				reporting("other", nodes("n", 1, cpuNode("8"))).reserving(reservation(t, "ns/other", now.Add(time.Minute))),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "4"))},
			want:    []string{"other"},
		},
		"an intent that does not resolve is a misconfiguration": {
			clusters: []cluster{reporting("a", nodes("n", 1, cpuNode("8")))},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "1").
				Requirement(st.MakeResource("more-cpu", "cpu").Requests("2").Obj()))},
			wantCode: framework.Misconfigured,
			wantMessage: `HPAIntent app: spec.consumers[0].requirements[1].resource.name: Invalid value: "cpu": ` +
				`two mandatory requirements ask for amounts of the same resource, but a container has one request and one limit per resource; keep one of them, or make the other optional`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.clusters)
			req := request(snap, tc.intents, tc.decided...)
			candidates := framework.NewFullBitset(snap.NumClusters())
			if tc.candidates != nil {
				candidates = snap.BitsetOf(tc.candidates)
			}
			p := newPlugin(t)

			rec := &recorder{snap: snap, reasons: map[string]string{}}
			got, status := p.Filter(t.Context(), framework.NewCycleState(), snap, req, candidates, rec)
			if status.Code() != tc.wantCode || status.Message() != tc.wantMessage {
				t.Fatalf("Filter status = %v %q, want %v %q", status.Code(), status.Message(), tc.wantCode, tc.wantMessage)
			}
			if tc.wantCode != framework.Success {
				return
			}
			if diff := cmp.Diff(tc.want, names(snap, got)); diff != "" {
				t.Errorf("feasible clusters (-want,+got):\n%s", diff)
			}
			if tc.wantReasons == nil {
				tc.wantReasons = map[string]string{}
			}
			if diff := cmp.Diff(tc.wantReasons, rec.reasons); diff != "" {
				t.Errorf("rejection reasons (-want,+got):\n%s", diff)
			}

			// Without a recorder (a cycle that is not explained), the result is the same.
			got, status = p.Filter(t.Context(), framework.NewCycleState(), snap, req, candidates, nil)
			if !status.IsSuccess() {
				t.Fatalf("Filter without rejections: %v", status.AsError())
			}
			if diff := cmp.Diff(tc.want, names(snap, got)); diff != "" {
				t.Errorf("feasible clusters without rejections (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestScore(t *testing.T) {
	// Nodes with the optional GPU, the optional AVX-512 flag, both or neither.
	both := gpuNode("A100").Label(avx512, "true")
	gpuOnly := gpuNode("A100")
	avxOnly := cpuNode("32").Label(avx512, "true")
	neither := cpuNode("32")
	clusters := []cluster{
		reporting("both", nodes("n", 1, both)),
		reporting("gpu", nodes("n", 1, gpuOnly)),
		reporting("avx", nodes("n", 1, avxOnly)),
		reporting("neither", nodes("n", 1, neither)),
		{name: "bare"},
	}
	optional := func(replicas int32) *st.ConsumerWrapper {
		return consumer("infer", replicas, "1").Requirement(
			st.MakeResource("gpu", gpu).Limits("1").Optional(9).Obj(),
			st.MakeFeature("avx512", avx512).Values("true").Optional(1).Obj(),
		)
	}
	tests := map[string]struct {
		clusters []cluster
		intents  []*fleetfitv1alpha1.HPAIntent
		want     map[string]int64
	}{
		"optional GPU weight 9 and AVX-512 weight 1": {
			clusters: clusters,
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(optional(1))},
			want:     map[string]int64{"both": 100, "gpu": 90, "avx": 10, "neither": 0, "bare": 0},
		},
		"an optional requirement counts only when every replica can meet it": {
			// One node has 4 GPUs: five replicas that each want one cannot all get one.
			clusters: clusters,
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(optional(5))},
			want:     map[string]int64{"both": 10, "gpu": 0, "avx": 10, "neither": 0, "bare": 0},
		},
		"an optional GPU on GPU nodes tainted nvidia.com/gpu:NoSchedule": {
			clusters: []cluster{
				reporting("gpu", append(nodes("g", 1, gpuNode("A100").Taint(gpu, "", corev1.TaintEffectNoSchedule)),
					nodes("c", 1, cpuNode("8"))...)),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(optional(1))},
			want:    map[string]int64{"gpu": 90},
		},
		"no optional requirements": {
			clusters: clusters,
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(consumer("web", 1, "1"))},
			want:     map[string]int64{"both": 0, "gpu": 0, "avx": 0, "neither": 0, "bare": 0},
		},
		"no intents": {
			clusters: clusters,
			want:     map[string]int64{"both": 0, "gpu": 0, "avx": 0, "neither": 0, "bare": 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.clusters)
			scores := make([]int64, snap.NumClusters())
			status := newPlugin(t).Score(t.Context(), framework.NewCycleState(), snap, request(snap, tc.intents),
				framework.NewFullBitset(snap.NumClusters()), scores)
			if !status.IsSuccess() {
				t.Fatalf("Score: %v", status.AsError())
			}
			got := map[string]int64{}
			for i, s := range scores {
				got[snap.Cluster(i).Name()] = s
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scores (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestScoreMisconfigured(t *testing.T) {
	snap := snapshot([]cluster{reporting("a", nodes("n", 1, cpuNode("8")))})
	bad := intent(consumer("web", 1, "1").Requirement(st.MakeResource("more-cpu", "cpu").Requests("2").Obj()))
	status := newPlugin(t).Score(t.Context(), framework.NewCycleState(), snap, request(snap, []*fleetfitv1alpha1.HPAIntent{bad}),
		framework.NewFullBitset(1), make([]int64, 1))
	if status.Code() != framework.Misconfigured {
		t.Errorf("Score status = %v %q, want Misconfigured", status.Code(), status.Message())
	}
}

// TestCompileCache checks that an intent is compiled again when its generation changes.
func TestCompileCache(t *testing.T) {
	snap := snapshot([]cluster{reporting("a", nodes("n", 1, cpuNode("8")))})
	p := newPlugin(t)
	in := intent(consumer("web", 1, "4"))
	in.UID, in.Generation = "uid-1", 1
	filter := func() []string {
		got, status := p.Filter(t.Context(), framework.NewCycleState(), snap, request(snap, []*fleetfitv1alpha1.HPAIntent{in}),
			framework.NewFullBitset(1), nil)
		if !status.IsSuccess() {
			t.Fatalf("Filter: %v", status.AsError())
		}
		return names(snap, got)
	}
	if diff := cmp.Diff([]string{"a"}, filter()); diff != "" {
		t.Fatalf("generation 1 (-want,+got):\n%s", diff)
	}
	in = intent(consumer("web", 1, "16"))
	in.UID, in.Generation = "uid-1", 2
	if diff := cmp.Diff([]string(nil), filter()); diff != "" {
		t.Errorf("generation 2 asks for more than a node has (-want,+got):\n%s", diff)
	}
}
