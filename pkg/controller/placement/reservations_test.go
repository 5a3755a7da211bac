package placement

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestPersistedReservations(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	node := utiltesting.MakeNode("n").Resource(corev1.ResourceCPU, "16").Resource(corev1.ResourceMemory, "64Gi").Obj()
	busy := func(cpu string) *corev1.Pod {
		return utiltesting.MakePod("app", "p-"+cpu, "n", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)})
	}
	clusters := []string{"idle", "running", "kept", "gone", "old"}
	fleet := cachetest.Fleet{}
	for _, c := range clusters {
		fleet.Clusters = append(fleet.Clusters, utiltesting.MakeCluster(c).Obj())
	}
	fleet.Inventories = []*fleetfitv1alpha1.ClusterInventory{
		utiltesting.MakeInventory("idle", now, []*corev1.Node{node}),
		// The intent's 2 × 2 cores run on "running": 4 more than when it was decided.
		utiltesting.MakeInventory("running", now, []*corev1.Node{node}, busy("1"), busy("4")),
		utiltesting.MakeInventory("kept", now, []*corev1.Node{node}, busy("1")),
		utiltesting.MakeInventory("old", now, []*corev1.Node{node}),
	}
	snap := fleet.Snapshot()
	intent := utiltesting.MakeHPAIntent("web", "app").Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("Deployment", "web", "main").Replicas(2).
			Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("2").Obj()).Obj(),
	).Obj()
	since := metav1.NewTime(now.Add(-time.Minute))
	oneCPU := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	intent.Status.Reservations = []fleetfitv1alpha1.ClusterReservation{
		{ClusterName: "running", Since: since, RequestedBefore: oneCPU},
		{ClusterName: "kept", Since: since, RequestedBefore: oneCPU},
		{ClusterName: "gone", Since: since},
		{ClusterName: "old", Since: metav1.NewTime(now.Add(-time.Hour))},
	}
	before := []string{"running", "kept", "gone", "old"}
	after := []scheduler.Decision{{ClusterName: "idle"}, {ClusterName: "kept"}, {ClusterName: "old"}, {ClusterName: "running"}}

	got := persistedReservations(intent, snap, before, after, now, 5*time.Minute)
	want := []fleetfitv1alpha1.ClusterReservation{
		// Newly decided, with the cluster's requested cpu and memory of then (nothing yet).
		{ClusterName: "idle", Since: metav1.NewTime(now), RequestedBefore: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0")}},
		// Still decided, not lapsed, its pods not shown yet.
		{ClusterName: "kept", Since: since, RequestedBefore: oneCPU},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reservations (-want,+got):\n%s", diff)
	}

	noAmounts := utiltesting.MakeHPAIntent("features", "app").Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("Deployment", "web", "main").
			Requirement(utiltesting.MakeFeature("avx", "cpu-feature.avx512").Obj()).Obj(),
	).Obj()
	if got := persistedReservations(noAmounts, snap, nil, after, now, 5*time.Minute); got != nil {
		t.Errorf("an intent with no amounts holds reservations %v", got)
	}
}

// TestPersistedMachineReservations: a reservation of machines records the cluster's machines
// in use of the type when it is decided, and ends once they have grown by the replicas, which is
// what a hub restarted later compares them with.
func TestPersistedMachineReservations(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	node := utiltesting.MakeNode("n").Resource(corev1.ResourceCPU, "16").Obj()
	// inUse is a cluster whose group general-machine has used compute-xlarge taken by guests.
	inUse := func(name string, used int32) *fleetfitv1alpha1.ClusterInventory {
		inv := utiltesting.MakeInventory(name, now, []*corev1.Node{node})
		inv.Status.MachineGroups = []fleetfitv1alpha1.ReportedMachineGroup{utiltesting.MakeReportedMachineGroup("general-machine",
			utiltesting.MakeReportedMachineType("compute-xlarge", 4, 4-used, used))}
		return inv
	}
	fleet := cachetest.Fleet{Inventories: []*fleetfitv1alpha1.ClusterInventory{
		inUse("new", 1),
		// Both guests of the intent run on "running": 2 more in use than when it was decided.
		inUse("running", 3),
		inUse("kept", 2),
	}}
	for _, c := range []string{"new", "running", "kept"} {
		fleet.Clusters = append(fleet.Clusters, utiltesting.MakeCluster(c).Obj())
	}
	snap := fleet.Snapshot()
	intent := utiltesting.MakeHPAIntent("trainer", "app").Placement("p").Consumer(
		utiltesting.MakeConsumer("trainer").Target("Deployment", "trainer", "main").Replicas(2).
			Requirement(utiltesting.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge").Obj()).Obj(),
	).Obj()
	const machines = "machines.fleetfit.io/general-machine.compute-xlarge"
	since := metav1.NewTime(now.Add(-time.Minute))
	oneInUse := corev1.ResourceList{machines: resource.MustParse("1")}
	intent.Status.Reservations = []fleetfitv1alpha1.ClusterReservation{
		{ClusterName: "running", Since: since, RequestedBefore: oneInUse},
		{ClusterName: "kept", Since: since, RequestedBefore: oneInUse},
	}
	after := []scheduler.Decision{{ClusterName: "kept"}, {ClusterName: "new"}, {ClusterName: "running"}}

	got := persistedReservations(intent, snap, []string{"running", "kept"}, after, now, 5*time.Minute)
	want := []fleetfitv1alpha1.ClusterReservation{
		{ClusterName: "kept", Since: since, RequestedBefore: oneInUse},
		{ClusterName: "new", Since: metav1.NewTime(now), RequestedBefore: oneInUse},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reservations (-want,+got):\n%s", diff)
	}
}
