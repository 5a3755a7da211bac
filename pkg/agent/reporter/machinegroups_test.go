package reporter

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func machineGroup(name string, ready bool, reserved int32) *v1alpha1.MachineGroup {
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	return utiltesting.MakeMachineGroup(name).
		MachineType(utiltesting.MakeGroupMachineType("small", "2", "4Gi").Available(3).Obj()).
		Condition(machinegroup.ConditionReady, status, "Test", "").
		Usage("small", v1alpha1.MachineUsage{Maximum: 3, Reserved: reserved, Used: 3 - reserved}).
		Obj()
}

// runMachineGroupReporter runs a reporter with machine groups on, over a
// spoke that serves MachineGroups when served is true.
func runMachineGroupReporter(t *testing.T, clock *testingclock.FakeClock, spokeFleetfit *fleetfitfake.Clientset, served bool) *fleetfitfake.Clientset {
	const cluster = "cluster1"
	if served {
		spokeFleetfit.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
			GroupVersion: v1alpha1.SchemeGroupVersion.String(),
			APIResources: []metav1.APIResource{{Name: "machinegroups", Kind: "MachineGroup"}},
		}}
	}
	hub := fleetfitfake.NewSimpleClientset()
	hubCluster := clusterfake.NewSimpleClientset()
	c, err := New(Clients{Spoke: k8sfake.NewClientset(node("n1", "16", "")), Hub: hub, HubCluster: hubCluster, SpokeFleetfit: spokeFleetfit},
		Options{ClusterName: cluster, Inventory: inventory.DefaultConfig(), MinInterval: time.Second, Clock: clock, MachineGroups: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), ktesting.NewLogger(t, ktesting.NewConfig())))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return hub
}

func reportedGroups(ctx context.Context, hub *fleetfitfake.Clientset) ([]v1alpha1.ReportedMachineGroup, bool) {
	inv, err := hub.FleetfitV1alpha1().ClusterInventories("cluster1").Get(ctx, "cluster1", metav1.GetOptions{})
	if err != nil || inv.Status.Revision == 0 {
		return nil, false
	}
	return inv.Status.MachineGroups, true
}

// TestMachineGroups checks that the spoke's machine groups reach the
// inventory, sorted by name, and that a status change of a group is
// reported at the next interval.
func TestMachineGroups(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	spoke := fleetfitfake.NewSimpleClientset(machineGroup("b", true, 3), machineGroup("a", false, 0))
	hub := runMachineGroupReporter(t, clock, spoke, true)

	want, _ := machinegroup.Report([]*v1alpha1.MachineGroup{machineGroup("a", false, 0), machineGroup("b", true, 3)})
	if want[0].Name != "a" || want[0].Ready || !want[1].Ready {
		t.Fatalf("machinegroup.Report: %+v", want)
	}
	var got []v1alpha1.ReportedMachineGroup
	poll(t, "the machine groups in the inventory", func() bool {
		// The groups' cache may sync after the first report; the next brings them.
		clock.Step(time.Second)
		got, _ = reportedGroups(t.Context(), hub)
		return len(got) == 2
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reported machine groups (-want,+got):\n%s", diff)
	}

	// Two guests leave group b: its usage moves, and so does the report.
	b := machineGroup("b", true, 3)
	b.Status.AvailableMachines[0].Usage = v1alpha1.MachineUsage{Maximum: 3, Reserved: 1, Used: 2}
	if _, err := spoke.FleetfitV1alpha1().MachineGroups().UpdateStatus(t.Context(), b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the new usage of b", func() bool {
		clock.Step(time.Second)
		got, _ = reportedGroups(t.Context(), hub)
		return len(got) == 2 && got[1].MachineTypes[0].Usage.Reserved == 1
	})
}

// TestMachineGroupsWithoutCRD checks that a cluster that does not serve
// MachineGroups reports none and still reports the rest.
func TestMachineGroupsWithoutCRD(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	hub := runMachineGroupReporter(t, clock, fleetfitfake.NewSimpleClientset(machineGroup("a", true, 3)), false)
	poll(t, "the first report", func() bool {
		_, ok := reportedGroups(t.Context(), hub)
		return ok
	})
	clock.Step(time.Second)
	if got, _ := reportedGroups(t.Context(), hub); len(got) != 0 {
		t.Errorf("reported machine groups of a cluster without the CRD: %+v", got)
	}
}
