package placement

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	testingclock "k8s.io/utils/clock/testing"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestPodCandidates: the consumers of one pod share its candidates and its decisions. halves
// has two nodes of 4 cpu, big one of 8; app and sidecar, 3 cpu each, are containers of the
// Deployment web, and api, 3 cpu, a Deployment of its own.
func TestPodCandidates(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	node := func(name, cpu string) *corev1.Node {
		return utiltesting.MakeNode(name).Resource(corev1.ResourceCPU, cpu).Resource(corev1.ResourceMemory, "64Gi").Obj()
	}
	fleet := cachetest.Fleet{
		Clusters: []*clusterv1.ManagedCluster{
			utiltesting.MakeCluster("big").ClusterSet("default").Obj(),
			utiltesting.MakeCluster("halves").ClusterSet("default").Obj(),
		},
		Sets:     []*clusterv1beta2.ManagedClusterSet{utiltesting.MakeExclusiveClusterSet("default")},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{utiltesting.MakeClusterSetBinding("app", "default")},
		Inventories: []*fleetfitv1alpha1.ClusterInventory{
			utiltesting.MakeInventory("big", now, []*corev1.Node{node("b", "8")}),
			utiltesting.MakeInventory("halves", now, []*corev1.Node{node("h0", "4"), node("h1", "4")}),
		},
	}
	container := func(name, workload, container string) fleetfitv1alpha1.ResourceConsumer {
		return utiltesting.MakeConsumer(name).Target("Deployment", workload, container).Replicas(1).
			Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("3").Obj()).Obj()
	}
	tests := map[string]struct {
		consumers []fleetfitv1alpha1.ResourceConsumer
		want      []fleetfitv1alpha1.ConsumerCandidates
		decided   []string
	}{
		"containers of one pod": {
			consumers: []fleetfitv1alpha1.ResourceConsumer{container("app", "web", "app"), container("sidecar", "web", "sidecar")},
			want: []fleetfitv1alpha1.ConsumerCandidates{
				{Consumer: "app", Replicas: 1, Mode: fleetfitv1alpha1.CandidateAllow, Clusters: []string{"big"}},
				{Consumer: "sidecar", Replicas: 1, Mode: fleetfitv1alpha1.CandidateAllow, Clusters: []string{"big"}},
			},
			decided: []string{"big"},
		},
		"pods of their own": {
			consumers: []fleetfitv1alpha1.ResourceConsumer{container("app", "web", "app"), container("api", "api", "app")},
			want: []fleetfitv1alpha1.ConsumerCandidates{
				// Every cluster: the shorter list is the empty deny list.
				{Consumer: "app", Replicas: 1, Mode: fleetfitv1alpha1.CandidateDeny},
				{Consumer: "api", Replicas: 1, Mode: fleetfitv1alpha1.CandidateDeny},
			},
			decided: []string{"big", "halves"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), fleet.ScoreLister()),
				plugins.NewRegistry(), plugins.DefaultProfile())
			if err != nil {
				t.Fatal(err)
			}
			in := utiltesting.MakeHPAIntent("web", "app").Placement("p").Consumer(tc.consumers...).Obj()
			plan := PlanCycle(t.Context(), PlanInput{
				Scheduler: s, Snapshot: fleet.Snapshot(), Placement: utiltesting.MakePlacement("p", "app").ClusterSets("default").Obj(),
				Intents: []*fleetfitv1alpha1.HPAIntent{in}, Now: now,
			})
			if plan.Kept {
				t.Fatalf("the cycle failed: %v", plan.Failure)
			}
			if diff := cmp.Diff(tc.want, plan.Intents[0].Status.Candidates); diff != "" {
				t.Errorf("candidates (-want,+got):\n%s", diff)
			}
			var decided []string
			for _, d := range plan.Result.Decisions() {
				decided = append(decided, d.ClusterName)
			}
			if diff := cmp.Diff(tc.decided, decided); diff != "" {
				t.Errorf("decisions (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestPodReservation: a decision reserves the pod as a whole, one replica of 6 cpu, so another
// placement's 3-cpu pod no longer fits the 8-cpu node, and a 2-cpu one still does.
func TestPodReservation(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := cache.New()
	c.UpsertCluster(utiltesting.MakeCluster("big").Obj())
	c.UpsertInventory(utiltesting.MakeInventory("big", now, []*corev1.Node{
		utiltesting.MakeNode("b").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "64Gi").Obj(),
	}))
	container := func(name, workload, container, cpu string) fleetfitv1alpha1.ResourceConsumer {
		return utiltesting.MakeConsumer(name).Target("Deployment", workload, container).Replicas(1).
			Requirement(utiltesting.MakeResource("cpu", "cpu").Requests(cpu).Obj()).Obj()
	}
	in := utiltesting.MakeHPAIntent("web", "app").Placement("p").
		Consumer(container("app", "web", "app", "3"), container("sidecar", "web", "sidecar", "3")).Obj()
	Reserve(c, utiltesting.MakePlacement("p", "app").Obj(), []*fleetfitv1alpha1.HPAIntent{in}, nil,
		[]scheduler.Decision{{ClusterName: "big"}}, now, time.Minute)

	snap := c.Snapshot()
	info := snap.Cluster(0)
	type reservation struct {
		Replicas int64
		Amounts  corev1.ResourceList
	}
	var got []reservation
	for _, r := range info.Reservations {
		got = append(got, reservation{r.Replicas, r.Amounts})
	}
	want := []reservation{{Replicas: 1, Amounts: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reservations (-want,+got):\n%s", diff)
	}

	for cpu, wantWhy := range map[string]string{
		"3": "consumer other/api: no node has room left for a replica once other consumers and in-flight placements are counted",
		"2": "",
	} {
		other := utiltesting.MakeHPAIntent("other", "app").Placement("q").Consumer(container("api", "api", "app", cpu)).Obj()
		compiled, err := hpa.Compile(other)
		if err != nil {
			t.Fatal(err)
		}
		fits, why := info.FitsHardware([]*hpa.Pod{&compiled.Pods[0]}, "app/q", false, now)
		if fits != (wantWhy == "") || why != wantWhy {
			t.Errorf("a pod of %s cpu of another placement: fits %v, %q; want %q", cpu, fits, why, wantWhy)
		}
	}
}
