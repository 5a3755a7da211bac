package hpa

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/plugins"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestStatusOfALargeFleetIsWritten: an intent of 32 consumers scheduled over 10,000 clusters, of
// which every other one can host each consumer, gets a status that the API server accepts: the
// candidate lists are cut and count what they leave out. Uncut, they would name 160,000
// clusters (over 5 MB, past the API server's 3 MB request limit).
func TestStatusOfALargeFleetIsWritten(t *testing.T) {
	const (
		clusters  = 10000
		consumers = 32
		set       = "large"
	)
	e := newEnv(t, "status-size")
	now := time.Now()
	small := utiltesting.MakeNode("n").Resource(corev1.ResourceCPU, "2").Resource(corev1.ResourceMemory, "8Gi").Obj()
	large := utiltesting.MakeNode("n").Resource(corev1.ResourceCPU, "16").Resource(corev1.ResourceMemory, "64Gi").Obj()
	f := cachetest.Fleet{
		Sets:     []*clusterv1beta2.ManagedClusterSet{utiltesting.MakeExclusiveClusterSet(set)},
		Bindings: []*clusterv1beta2.ManagedClusterSetBinding{utiltesting.MakeClusterSetBinding(e.ns, set)},
	}
	for i := range clusters {
		name := fmt.Sprintf("managed-cluster-eu-west-%05d", i)
		f.Clusters = append(f.Clusters, utiltesting.MakeCluster(name).ClusterSet(set).Obj())
		node := small
		if i%2 == 0 {
			node = large
		}
		f.Inventories = append(f.Inventories, utiltesting.MakeInventory(name, now, []*corev1.Node{node}))
	}
	intent := utiltesting.MakeHPAIntent("wide", e.ns).Placement("wide")
	for k := range consumers {
		// 8 cores fit only on the large clusters: allow and deny lists of 5,000 each.
		intent.Consumer(utiltesting.MakeConsumer(fmt.Sprintf("c%02d", k)).Target("Deployment", fmt.Sprintf("d%02d", k), "main").
			Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("8").Obj()).Obj())
	}
	e.createIntent(intent)
	stored, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(t.Context(), "wide", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	sched, err := scheduler.New(scheduler.NewHandle(testingclock.NewFakePassiveClock(now), f.ScoreLister()), plugins.NewRegistry(), plugins.DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	plan := placement.PlanCycle(t.Context(), placement.PlanInput{
		Scheduler: sched, Snapshot: f.Snapshot(), Placement: utiltesting.MakePlacement("wide", e.ns).Obj(),
		Intents: []*fleetfitv1alpha1.HPAIntent{stored}, Now: now,
	})
	if plan.Kept {
		t.Fatalf("the cycle failed: %v", plan.Failure)
	}
	status := plan.Intents[0].Status
	if len(status.Candidates) != consumers {
		t.Fatalf("%d consumers have candidates, want %d", len(status.Candidates), consumers)
	}
	names := 0
	for _, c := range status.Candidates {
		names += len(c.Clusters)
		if got, want := len(c.Clusters)+int(c.OmittedClusters), clusters/2; got != want {
			t.Errorf("consumer %s: %d clusters named and %d omitted, want %d in all", c.Consumer, len(c.Clusters), c.OmittedClusters, want)
		}
	}
	if names > 1000 {
		t.Errorf("the candidates name %d clusters, want at most 1000", names)
	}
	raw, err := json.Marshal(status)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status of %d consumers over %d clusters: %d bytes, %d cluster names", consumers, clusters, len(raw), names)

	stored.Status = status
	if _, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).UpdateStatus(t.Context(), stored, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the status of %d bytes: %v", len(raw), err)
	}
}
