package hardwarefit

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// inWeb starts a consumer of replicas pods of the Deployment web whose container requests cpu
// cores: consumers made with it are containers of one pod.
func inWeb(name, container string, replicas int32, cpu string) *st.ConsumerWrapper {
	return st.MakeConsumer(name).Target("Deployment", "web", container).Replicas(replicas).
		Requirement(st.MakeResource("cpu", "cpu").Requests(cpu).Obj())
}

func TestFilterPods(t *testing.T) {
	halves := reporting("halves", nodes("n", 2, cpuNode("4")))
	big := reporting("big", nodes("n", 1, cpuNode("8")))
	tests := map[string]struct {
		clusters    []cluster
		intents     []*fleetfitv1alpha1.HPAIntent
		want        []string
		wantReasons map[string]string
		wantCode    framework.Code
		wantMessage string
	}{
		"two containers of one Deployment need one node with both": {
			clusters: []cluster{halves, big},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(inWeb("a", "app", 1, "3"), inWeb("b", "sidecar", 1, "3"))},
			want:     []string{"big"},
			wantReasons: map[string]string{
				"halves": "consumers app/a+b: no schedulable node has 6 cpu free; the best has 4",
			},
		},
		"the same amounts in two Deployments spread over the half-size nodes": {
			clusters: []cluster{halves, big},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(inWeb("a", "app", 1, "3"), consumer("b", 1, "3"))},
			want:     []string{"big", "halves"},
		},
		"every replica of the pod needs a node of its own": {
			clusters: []cluster{big, reporting("two-big", nodes("n", 2, cpuNode("8")))},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(inWeb("a", "app", 2, "3"), inWeb("b", "sidecar", 2, "3"))},
			want:     []string{"two-big"},
			wantReasons: map[string]string{
				"big": "consumers app/a+b: only 1 of 2 replicas fit on the cluster's nodes",
			},
		},
		"replicas of one pod's containers that disagree are a misconfiguration": {
			clusters: []cluster{big},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(inWeb("a", "app", 2, "1"), inWeb("b", "sidecar", 1, "1"))},
			wantCode: framework.Misconfigured,
			wantMessage: `HPAIntent app: consumers "a" (2 replicas) and "b" (1 replicas) target Deployment web, so they are containers of one pod ` +
				`and run as many replicas; give them the same replicas, or leave replicas unset on both to take the workload's`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.clusters)
			rec := &recorder{snap: snap, reasons: map[string]string{}}
			got, status := newPlugin(t).Filter(t.Context(), framework.NewCycleState(), snap, request(snap, tc.intents),
				framework.NewFullBitset(snap.NumClusters()), rec)
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
		})
	}
}

func TestScorePods(t *testing.T) {
	// Both clusters have 16 cores: one node of 16, or two of 8.
	clusters := []cluster{
		reporting("one-node", nodes("n", 1, cpuNode("16"))),
		reporting("two-nodes", nodes("n", 2, cpuNode("8"))),
	}
	tests := map[string]struct {
		intents []*fleetfitv1alpha1.HPAIntent
		want    map[string]int64
	}{
		"an optional amount of one container counts for the whole pod": {
			// With more, a replica of the pod is 6 + 4 cores: it fits on the 16-core node only,
			// though the container's 6 cores alone would fit on an 8-core node.
			intents: []*fleetfitv1alpha1.HPAIntent{intent(
				inWeb("a", "app", 1, "2").Requirement(st.MakeResource("more", "cpu").Requests("6").Optional(5).Obj()),
				inWeb("b", "sidecar", 1, "4"),
			)},
			want: map[string]int64{"one-node": 100, "two-nodes": 0},
		},
		"in a Deployment of its own, the same optional amount counts on both": {
			intents: []*fleetfitv1alpha1.HPAIntent{intent(
				inWeb("a", "app", 1, "2").Requirement(st.MakeResource("more", "cpu").Requests("6").Optional(5).Obj()),
				consumer("b", 1, "4"),
			)},
			want: map[string]int64{"one-node": 100, "two-nodes": 100},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(clusters)
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
