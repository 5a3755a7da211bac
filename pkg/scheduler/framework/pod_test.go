package framework

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/fleetfit/fleetfit/pkg/hpa"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// nodesCluster is a cluster whose agent reported a minute ago nodes of the given cpu each.
func nodesCluster(cpus ...string) *ClusterInfo {
	var nodes []*corev1.Node
	for i, cpu := range cpus {
		nodes = append(nodes, st.MakeNode(string(rune('a'+i))).Resource(corev1.ResourceCPU, cpu).Resource(corev1.ResourceMemory, "32Gi").Obj())
	}
	return NewClusterInfo(st.MakeCluster("c1").Obj(), nil, st.MakeInventory("c1", now.Add(-time.Minute), nodes))
}

// sidecarPods compiles the intent fwall with consumers a (3 cpu, container app) and b (3 cpu,
// container sidecar) of replicas each, both in Deployment web unless apart.
func sidecarPods(t *testing.T, replicas int32, apart bool) []*hpa.Pod {
	t.Helper()
	other := "web"
	if apart {
		other = "api"
	}
	in := st.MakeHPAIntent("fwall", "ns").Placement("p").
		Consumer(st.MakeConsumer("a").Target("Deployment", "web", "app").Replicas(replicas).
			Requirement(st.MakeResource("cpu", "cpu").Requests("3").Obj()).Obj()).
		Consumer(st.MakeConsumer("b").Target("Deployment", other, "sidecar").Replicas(replicas).
			Requirement(st.MakeResource("cpu", "cpu").Requests("3").Obj()).Obj())
	compiled, err := hpa.Compile(in.Obj())
	if err != nil {
		t.Fatal(err)
	}
	return podsOf(compiled)
}

func TestFitsHardwarePods(t *testing.T) {
	type result struct {
		Fits bool
		Why  string
	}
	tests := map[string]struct {
		nodes    []string
		replicas int32
		apart    bool
		decided  bool
		want     result
	}{
		"two containers of one Deployment on two half-size nodes": {
			nodes: []string{"4", "4"}, replicas: 1,
			want: result{Why: "consumers fwall/a+b: no schedulable node has 6 cpu free; the best has 4"},
		},
		"two containers of one Deployment on one big node": {
			nodes: []string{"8"}, replicas: 1,
			want: result{Fits: true},
		},
		"two Deployments on two half-size nodes": {
			nodes: []string{"4", "4"}, replicas: 1, apart: true,
			want: result{Fits: true},
		},
		"the second replica of the pod finds no node": {
			nodes: []string{"8", "4"}, replicas: 2,
			want: result{Why: "consumers fwall/a+b: only 1 of 2 replicas fit on the cluster's nodes"},
		},
		"a decided cluster keeps passing while a node has the features": {
			nodes: []string{"4", "4"}, replicas: 1, decided: true,
			want: result{Fits: true},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			info := nodesCluster(tc.nodes...)
			var got result
			got.Fits, got.Why = info.FitsHardware(sidecarPods(t, tc.replicas, tc.apart), "ns/p", tc.decided, now)
			if fast := info.HardwareFits(sidecarPods(t, tc.replicas, tc.apart), "ns/p", tc.decided, now); fast != got.Fits {
				t.Errorf("HardwareFits = %t, FitsHardware = %t: the verdict without a reason differs", fast, got.Fits)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
