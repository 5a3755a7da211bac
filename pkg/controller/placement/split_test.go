package placement

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var splitNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// gpuNodes returns n nodes of the cluster, each with gpus GPUs and cpu cores free.
func gpuNodes(cluster string, n int, gpus, cpu string) []*corev1.Node {
	var out []*corev1.Node
	for k := range n {
		out = append(out, st.MakeNode(fmt.Sprintf("%s-gpu-%d", cluster, k)).Resource(corev1.ResourceCPU, cpu).
			Resource(corev1.ResourceMemory, "256Gi").Resource("nvidia.com/gpu", gpus).Obj())
	}
	return out
}

// splitFleet is three clusters whose nodes hold 4, 3 and 5 replicas of one GPU and 8 cores:
// cluster1 two nodes of 2 GPUs and 16 cores, cluster2 one node of 4 GPUs but 24 cores (4 GPUs
// in all, room for 3), cluster3 five nodes of one GPU each; more adds cluster4 with room for 9.
func splitFleet(more bool) *cache.Cache {
	o := cache.Objects{
		Sets:     []*clusterv1beta2.ManagedClusterSet{st.MakeExclusiveClusterSet("default")},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{st.MakeClusterSetBinding("app", "default")},
	}
	add := func(name string, nodes []*corev1.Node, labels map[string]string) {
		c := st.MakeCluster(name).ClusterSet("default")
		for k, v := range labels {
			c.Label(k, v)
		}
		o.Clusters = append(o.Clusters, c.Obj())
		o.Inventories = append(o.Inventories, st.MakeInventory(name, splitNow, nodes))
	}
	add("cluster1", gpuNodes("cluster1", 2, "2", "16"), map[string]string{"zone": "a"})
	add("cluster2", gpuNodes("cluster2", 1, "4", "24"), map[string]string{"zone": "b"})
	add("cluster3", gpuNodes("cluster3", 5, "1", "8"), map[string]string{"zone": "b"})
	if more {
		add("cluster4", gpuNodes("cluster4", 9, "1", "8"), map[string]string{"zone": "c"})
	}
	c := cache.New()
	c.Load(o)
	return c
}

func splitIntent(name string, total int32, s fleetfitv1alpha1.ReplicaSplit) *fleetfitv1alpha1.HPAIntent {
	in := st.MakeHPAIntent(name, "app").Placement(name).Consumer(
		st.MakeConsumer("infer").Target("Deployment", name, "main").Replicas(total).Requirement(
			st.MakeResource("cpu", "cpu").Requests("8").Obj(),
			st.MakeResource("gpu", "nvidia.com/gpu").Limits("1").Obj()).Obj()).Split(s).Obj()
	in.UID = types.UID("uid-" + name)
	in.Generation = 1
	return in
}

// cycle runs one cycle of the placement as the controller does, reserving what it newly
// decides, and returns the intent with its new status.
func cycle(t *testing.T, c *cache.Cache, p *clusterv1beta1.Placement, in *fleetfitv1alpha1.HPAIntent) (*Plan, *fleetfitv1alpha1.HPAIntent) {
	t.Helper()
	s, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(splitNow), nil), plugins.NewRegistry(), plugins.DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	snap := c.Snapshot()
	key := p.Namespace + "/" + p.Name
	before := snap.DecidedNames(key)
	plan := PlanCycle(t.Context(), PlanInput{Scheduler: s, Snapshot: snap, Placement: p,
		Intents: []*fleetfitv1alpha1.HPAIntent{in}, Now: splitNow, Pinned: before})
	if plan.Kept {
		t.Fatalf("the cycle failed: %v", plan.Failure)
	}
	Reserve(c, p, plan.Intents, before, plan.Result.Decisions(), splitNow, DefaultReservationTimeout)
	c.Assume(key, decisionNames(plan.Result.Decisions()))
	return plan, plan.Intents[0]
}

func shares(s *fleetfitv1alpha1.SplitStatus) map[string]int32 {
	if s == nil {
		return nil
	}
	out := map[string]int32{}
	for _, sh := range s.Shares {
		out[sh.ClusterName] = sh.Replicas
	}
	return out
}

func TestSplitByCapacity(t *testing.T) {
	c := splitFleet(false)
	p := st.MakePlacement("infer", "app").ClusterSets("default").NumberOfClusters(3).Obj()
	plan, in := cycle(t, c, p, splitIntent("infer", 10, fleetfitv1alpha1.ReplicaSplit{}))
	want := map[string]int32{"cluster1": 4, "cluster2": 3, "cluster3": 3}
	if diff := cmp.Diff(want, shares(in.Status.Split)); diff != "" {
		t.Fatalf("shares (-want +got):\n%s", diff)
	}
	if in.Status.Split.Unplaced != 0 || in.Status.Split.Replicas != 10 {
		t.Errorf("split status %+v, want 10 replicas, none unplaced", in.Status.Split)
	}
	if got := decisionNames(plan.Result.Decisions()); len(got) != 3 {
		t.Errorf("decisions %v, want the three clusters", got)
	}

	// The same cycle again holds still.
	in.Status.ScheduledPlacement = p.Name
	_, again := cycle(t, c, p, in)
	if diff := cmp.Diff(want, shares(again.Status.Split)); diff != "" {
		t.Errorf("shares moved on a cycle with nothing changed (-want +got):\n%s", diff)
	}

	// 14 replicas: cluster3 has room for 2 more, then none is left.
	up := again.DeepCopy()
	up.Spec.Consumers[0].Replicas = ptr.To[int32](14)
	up.Generation = 2
	_, scaled := cycle(t, c, p, up)
	want = map[string]int32{"cluster1": 4, "cluster2": 3, "cluster3": 5}
	if diff := cmp.Diff(want, shares(scaled.Status.Split)); diff != "" {
		t.Errorf("shares after scaling to 14 (-want +got):\n%s", diff)
	}
	if scaled.Status.Split.Unplaced != 2 {
		t.Errorf("unplaced %d, want 2 (the clusters hold 12)", scaled.Status.Split.Unplaced)
	}
}

func TestSplitScaleUpFillsRoomFirst(t *testing.T) {
	c := splitFleet(true)
	p := st.MakePlacement("infer", "app").ClusterSets("default").NumberOfClusters(4).Obj()
	plan, in := cycle(t, c, p, splitIntent("infer", 10, fleetfitv1alpha1.ReplicaSplit{}))
	// As few clusters as hold 10: cluster1 4, cluster2 3, cluster3 3; cluster4 is not needed.
	if got := len(plan.Result.Decisions()); got != 3 {
		t.Fatalf("%d decisions, want 3: %v", got, shares(in.Status.Split))
	}
	in.Status.ScheduledPlacement = p.Name
	up := in.DeepCopy()
	up.Spec.Consumers[0].Replicas = ptr.To[int32](14)
	up.Generation = 2
	_, scaled := cycle(t, c, p, up)
	want := map[string]int32{"cluster1": 4, "cluster2": 3, "cluster3": 5, "cluster4": 2}
	if diff := cmp.Diff(want, shares(scaled.Status.Split)); diff != "" {
		t.Errorf("shares after scaling to 14 (-want +got):\n%s", diff)
	}
}

func TestSplitPolicies(t *testing.T) {
	cases := map[string]struct {
		total int32
		split fleetfitv1alpha1.ReplicaSplit
		want  map[string]int32
		// unplaced is what waits; decided how many clusters are decided.
		unplaced int32
		decided  int
		reason   string
	}{
		"evenly": {
			total: 9, split: fleetfitv1alpha1.ReplicaSplit{By: fleetfitv1alpha1.SplitEvenly},
			want: map[string]int32{"cluster1": 3, "cluster2": 3, "cluster3": 3}, decided: 3, reason: "Scheduled",
		},
		"a smallest share no cluster but one can hold": {
			total: 10, split: fleetfitv1alpha1.ReplicaSplit{MinReplicas: ptr.To[int32](5)},
			want: map[string]int32{"cluster3": 5}, unplaced: 5, decided: 1, reason: ReasonPartlyScheduled,
		},
		"all or nothing when the clusters hold 12 of 20": {
			total: 20, split: fleetfitv1alpha1.ReplicaSplit{AllOrNothing: true},
			want: nil, unplaced: 20, decided: 0, reason: "NoFeasibleCluster",
		},
		"place what fits of 20": {
			total: 20, split: fleetfitv1alpha1.ReplicaSplit{},
			want: map[string]int32{"cluster1": 4, "cluster2": 3, "cluster3": 5}, unplaced: 8, decided: 3, reason: ReasonPartlyScheduled,
		},
		"by weights, a cluster without weight is not chosen": {
			total: 6, split: fleetfitv1alpha1.ReplicaSplit{By: fleetfitv1alpha1.SplitByWeights, Weights: []fleetfitv1alpha1.ClusterWeight{
				{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}, Weight: 2},
				{ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "b"}}, Weight: 1},
			}},
			want: map[string]int32{"cluster1": 3, "cluster2": 2, "cluster3": 1}, decided: 3, reason: "Scheduled",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := splitFleet(false)
			p := st.MakePlacement("infer", "app").ClusterSets("default").NumberOfClusters(3).Obj()
			plan, in := cycle(t, c, p, splitIntent("infer", tc.total, tc.split))
			got := shares(in.Status.Split)
			if len(got) == 0 {
				got = nil
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
			if in.Status.Split.Unplaced != tc.unplaced {
				t.Errorf("unplaced %d, want %d", in.Status.Split.Unplaced, tc.unplaced)
			}
			if n := len(plan.Result.Decisions()); n != tc.decided {
				t.Errorf("%d decisions, want %d", n, tc.decided)
			}
			for _, cond := range in.Status.Conditions {
				if cond.Type == fleetfitv1alpha1.ConditionScheduled && cond.Reason != tc.reason {
					t.Errorf("Scheduled reason %s (%s), want %s", cond.Reason, cond.Message, tc.reason)
				}
			}
		})
	}
}

// TestSplitBurstDoesNotOvercommit: split intents scheduled one after the other, as a burst
// is, each reserving its shares, never count the same room twice: per cluster, the shares of
// all of them never exceed the replicas its nodes hold.
func TestSplitBurstDoesNotOvercommit(t *testing.T) {
	c := splitFleet(false)
	room := map[string]int32{"cluster1": 4, "cluster2": 3, "cluster3": 5}
	used := map[string]int32{}
	var placed, unplaced int32
	for k := range 4 {
		name := fmt.Sprintf("burst-%d", k)
		p := st.MakePlacement(name, "app").ClusterSets("default").NumberOfClusters(3).Obj()
		_, in := cycle(t, c, p, splitIntent(name, 5, fleetfitv1alpha1.ReplicaSplit{}))
		for cl, n := range shares(in.Status.Split) {
			used[cl] += n
			placed += n
		}
		unplaced += in.Status.Split.Unplaced
	}
	for cl, n := range used {
		if n > room[cl] {
			t.Errorf("%s got %d replicas, but its nodes hold %d", cl, n, room[cl])
		}
	}
	if placed != 12 || unplaced != 8 {
		t.Errorf("placed %d and %d wait, want 12 (all the room) and 8", placed, unplaced)
	}
}
