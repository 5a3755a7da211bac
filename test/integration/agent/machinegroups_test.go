package agent

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestAgentReportsMachineGroups runs a reporter with machine groups on
// against the second spoke, whose CRDs include MachineGroup, and checks that
// the hub's ClusterInventory takes the groups with their usage, follows a
// change of usage, and drops a deleted group.
func TestAgentReportsMachineGroups(t *testing.T) {
	ctx := t.Context()
	cluster := framework.SpokeName(1)
	spokeCfg := fleet.Spokes[1].AdminConfig()
	hubCfg := fleet.Hub.AdminConfig()
	spokeFleetfit := fleetfitclient.NewForConfigOrDie(spokeCfg)
	hubFleetfit := fleetfitclient.NewForConfigOrDie(hubCfg)
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}

	groups := spokeFleetfit.FleetfitV1alpha1().MachineGroups()
	g, err := groups.Create(ctx, utiltesting.MakeMachineGroup("training").
		MachineType(utiltesting.MakeGroupMachineType("compute-xlarge", "40", "128Gi").Available(2).
			GPU(v1alpha1.MachineGPU{Num: 2, Product: "NVIDIA-GeForce-RTX-3090"}).Obj()).
		Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = groups.Delete(context.Background(), g.Name, metav1.DeleteOptions{}) })
	setUsage := func(reserved, used int32) *v1alpha1.MachineGroup {
		t.Helper()
		g.Status.Conditions = []metav1.Condition{{Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		g.Status.AvailableMachines = []v1alpha1.AvailableMachine{{Name: "compute-xlarge", Usage: v1alpha1.MachineUsage{Maximum: 2, Reserved: reserved, Used: used}}}
		if g, err = groups.UpdateStatus(ctx, g, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return g
	}
	setUsage(2, 0)

	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	runCtx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
	r, err := reporter.New(reporter.Clients{
		Spoke: fleet.Spokes[1].AdminClient(), Hub: hubFleetfit, HubCluster: clusterclient.NewForConfigOrDie(hubCfg), SpokeFleetfit: spokeFleetfit,
	}, reporter.Options{ClusterName: cluster, Inventory: inventory.DefaultConfig(), MinInterval: minInterval, MachineGroups: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("reporter: %v", err)
		}
	})

	quantities := cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
	reported := func(want []v1alpha1.ReportedMachineGroup) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			inv, err := hubFleetfit.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if diff := cmp.Diff(want, inv.Status.MachineGroups, quantities); diff != "" || inv.Status.OmittedMachineGroups != 0 {
				return fmt.Errorf("machine groups on the hub (-want,+got), %d omitted:\n%s", inv.Status.OmittedMachineGroups, diff)
			}
			return nil
		}
	}
	want, _ := machinegroup.Report([]*v1alpha1.MachineGroup{g})
	if len(want) != 1 || !want[0].Ready || want[0].MachineTypes[0].Usage.Reserved != 2 {
		t.Fatalf("machinegroup.Report: %+v", want)
	}
	framework.Eventually(t, reported(want))

	// A guest takes a machine: the new usage reaches the hub.
	want, _ = machinegroup.Report([]*v1alpha1.MachineGroup{setUsage(1, 1)})
	framework.Eventually(t, reported(want))

	if err := groups.Delete(ctx, g.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, reported(nil))
}
