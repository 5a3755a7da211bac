package hpa

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// The tests of machine types create MachineGroups on the spokes and set their status as the
// spoke's machine controller would (no reservation pod runs here); the spokes' agents report
// them to the hub (startAgents runs them with machine groups on), so the hub schedules on
// what real agents report.

// machineUsage is the usage of one machine type of a test's MachineGroup.
type machineUsage struct {
	name                    string
	maximum, reserved, used int32
}

// machineGroupOn creates the MachineGroup group on spoke with the given types and their usage
// (status Ready), and deletes it when the test ends. Group names are the test's own, as the
// spokes are shared.
func (e *env) machineGroupOn(spoke int, group string, types ...machineUsage) {
	e.t.Helper()
	groups := fleetfitclient.NewForConfigOrDie(fleet.Spokes[spoke].AdminConfig()).FleetfitV1alpha1().MachineGroups()
	g := utiltesting.MakeMachineGroup(group)
	for _, u := range types {
		g.MachineType(utiltesting.MakeGroupMachineType(u.name, "40", "128Gi").Available(u.maximum).Obj())
	}
	if _, err := groups.Create(e.t.Context(), g.Obj(), metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		if err := groups.Delete(context.Background(), group, metav1.DeleteOptions{}); err != nil {
			e.t.Errorf("deleting MachineGroup %s of %s: %v", group, cluster(spoke), err)
		}
	})
	e.machineSetUsage(spoke, group, types...)
}

// machineSetUsage sets the usage of the group's types on spoke, as the machine controller
// does when reservations start or guests take them over, and waits until the hub's
// ClusterInventory of the spoke reports exactly that usage.
func (e *env) machineSetUsage(spoke int, group string, types ...machineUsage) {
	e.t.Helper()
	groups := fleetfitclient.NewForConfigOrDie(fleet.Spokes[spoke].AdminConfig()).FleetfitV1alpha1().MachineGroups()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		g, err := groups.Get(e.t.Context(), group, metav1.GetOptions{})
		if err != nil {
			return err
		}
		g.Status.ObservedGeneration = g.Generation
		g.Status.Conditions = []metav1.Condition{{Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
		g.Status.AvailableMachines = nil
		for _, u := range types {
			g.Status.AvailableMachines = append(g.Status.AvailableMachines, v1alpha1.AvailableMachine{
				Name: u.name, Usage: v1alpha1.MachineUsage{Maximum: u.maximum, Reserved: u.reserved, Used: u.used},
			})
		}
		_, err = groups.UpdateStatus(e.t.Context(), g, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, u := range types {
		e.machineWaitReported(spoke, group, u)
	}
}

// machineWaitReported waits until the hub's ClusterInventory of spoke reports the type of
// group with usage u.
func (e *env) machineWaitReported(spoke int, group string, u machineUsage) {
	e.t.Helper()
	name := cluster(spoke)
	e.eventually(func(ctx context.Context) error {
		inv, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(name).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		i := slices.IndexFunc(inv.Status.MachineGroups, func(g v1alpha1.ReportedMachineGroup) bool { return g.Name == group })
		if i < 0 {
			return fmt.Errorf("inventory of %s reports no machine group %s yet", name, group)
		}
		g := inv.Status.MachineGroups[i]
		j := slices.IndexFunc(g.MachineTypes, func(t v1alpha1.ReportedMachineType) bool { return t.Name == u.name })
		if j < 0 {
			return fmt.Errorf("inventory of %s: group %s reports no type %s yet", name, group, u.name)
		}
		got := g.MachineTypes[j].Usage
		want := v1alpha1.MachineUsage{Maximum: u.maximum, Reserved: u.reserved, Used: u.used}
		if got != want {
			return fmt.Errorf("inventory of %s: %s/%s usage %+v, want %+v", name, group, u.name, got, want)
		}
		return nil
	})
}

// machineIntent is an intent named after its placement whose one consumer "app" takes replicas
// machines of group/type.
func machineIntent(placement string, replicas int32, group, machineType string) *utiltesting.HPAIntentWrapper {
	return oneConsumer(placement, replicas, utiltesting.MakeMachineTypeRequirement("machine", group, machineType).Obj())
}

// TestMachineTypeChosenWhereFree: cluster1 has one compute-xlarge free, cluster2 two. An intent
// of two replicas of compute-xlarge goes to cluster2; explain, the intent's candidates and its
// Scheduled condition of a placement that may only use cluster1 say why not cluster1, with the
// numbers.
func TestMachineTypeChosenWhereFree(t *testing.T) {
	const group = "mt-chosen"
	e := newEnv(t, "mt-chosen")
	e.machineGroupOn(0, group, machineUsage{name: "compute-xlarge", maximum: 3, reserved: 1, used: 2})
	e.machineGroupOn(1, group, machineUsage{name: "compute-xlarge", maximum: 2, reserved: 2})

	e.createIntent(machineIntent("mt-chosen", 2, group, "compute-xlarge"))
	e.createPlacement(onClusters("mt-chosen", cluster(0), cluster(1)).NumberOfClusters(1))
	e.createIntent(machineIntent("mt-only-1", 2, group, "compute-xlarge"))
	e.createPlacement(onClusters("mt-only-1", cluster(0)))
	e.createIntent(machineIntent("mt-no-type", 1, group, "compute-medium"))
	e.createPlacement(onClusters("mt-no-type", cluster(1)))
	e.startHub(true)

	e.waitDecided("mt-chosen", cluster(1))
	e.waitIntent("mt-chosen", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(allow("app", 2, cluster(1))),
	))
	e.explain("mt-chosen", rejectedBy(cluster(0), []string{cluster(1)},
		"consumer mt-chosen/app: mt-chosen/compute-xlarge: 1 free, 2 wanted"))

	in := e.waitIntent("mt-only-1", hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "NoFeasibleCluster"))
	want := fmt.Sprintf("%s: consumer mt-only-1/app: mt-chosen/compute-xlarge: 1 free, 2 wanted", cluster(0))
	if msg := scheduledMessage(in); !strings.Contains(msg, want) {
		t.Errorf("Scheduled message %q, want it to say %q", msg, want)
	}
	e.waitDecided("mt-only-1")
	// fleetfit explain, which schedules the placement again from the hub's objects, says the same.
	out := machineRunFleetfit(t, "explain", "placement", "mt-only-1", "-n", e.ns, "--kubeconfig", machineKubeconfig(t))
	if !strings.Contains(out, "consumer mt-only-1/app: mt-chosen/compute-xlarge: 1 free, 2 wanted") {
		t.Errorf("fleetfit explain placement mt-only-1 printed\n%s\nwant it to give the numbers of compute-xlarge", out)
	}

	e.explain("mt-no-type", rejectedBy(cluster(1), nil, "machine group mt-chosen has no type compute-medium"))
	e.waitDecided("mt-no-type")
}

// TestMachineGuestTakesOver: cluster1 has two compute-xlarge free (of three) and a placement
// takes both. While its guests have not started, a second placement sees them held by the first
// one's in-flight reservation; once the spoke reports that guests took over both reservations,
// the hub's inventory shows none free and HardwareFit says so in plain numbers. The
// reservation has ended then (the machines in use grew by two): when the third machine is
// reserved, the second placement gets it. The first placement keeps its cluster throughout.
func TestMachineGuestTakesOver(t *testing.T) {
	const group = "mt-takeover"
	e := newEnv(t, "mt-takeover")
	e.machineGroupOn(0, group, machineUsage{name: "compute-xlarge", maximum: 3, reserved: 2})
	e.createIntent(machineIntent("mt-first", 2, group, "compute-xlarge"))
	e.createPlacement(onClusters("mt-first", cluster(0)))
	e.startHub(true)
	e.waitDecided("mt-first", cluster(0))

	e.createIntent(machineIntent("mt-second", 1, group, "compute-xlarge"))
	e.createPlacement(onClusters("mt-second", cluster(0)))
	e.explain("mt-second", rejectedBy(cluster(0), nil,
		"mt-takeover/compute-xlarge: 0 free, 1 wanted (2 reported free, 2 of them taken by other consumers and in-flight placements)"))

	// Two guests take over the two reservation pods.
	e.machineSetUsage(0, group, machineUsage{name: "compute-xlarge", maximum: 3, used: 2})
	e.explain("mt-second", func(verdicts map[string]string) error {
		want := "HardwareFit: consumer mt-second/app: mt-takeover/compute-xlarge: 0 free, 1 wanted"
		if v := verdicts[cluster(0)]; v != want {
			return fmt.Errorf("explain: %s is %q, want %q", cluster(0), v, want)
		}
		return nil
	})
	e.waitDecided("mt-second")

	// The machine controller reserves the group's third machine: had the first placement's
	// reservation outlived its guests, it would still hold that one too.
	e.machineSetUsage(0, group, machineUsage{name: "compute-xlarge", maximum: 3, reserved: 1, used: 2})
	e.waitDecided("mt-second", cluster(0))
	framework.Consistently(t, time.Second, e.decides("mt-first", cluster(0)))
}

// TestMachineBurstForTheLastMachine: cluster1 has one compute-xlarge free. Two intents of one
// replica each, with placements that may only use cluster1, are created at once against a
// running hub: exactly one is scheduled, and the other's condition names the machine.
func TestMachineBurstForTheLastMachine(t *testing.T) {
	const group = "mt-burst"
	e := newEnv(t, "mt-burst")
	e.machineGroupOn(0, group, machineUsage{name: "compute-xlarge", maximum: 4, reserved: 1, used: 3})
	e.startHub(false)

	names := []string{"mt-burst-a", "mt-burst-b"}
	for _, name := range names {
		e.createIntent(machineIntent(name, 1, group, "compute-xlarge"))
	}
	for _, name := range names {
		e.createPlacement(onClusters(name, cluster(0)))
	}

	scheduled := func(ctx context.Context) ([]string, error) {
		var out []string
		for _, name := range names {
			in, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			ok := hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled")(in) == nil
			notOK := hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "NoFeasibleCluster")(in) == nil
			if !ok && !notOK {
				return nil, fmt.Errorf("HPAIntent %s is not judged yet", name)
			}
			decided, err := e.decided(ctx, name)
			if err != nil {
				return nil, err
			}
			if ok != (len(decided) == 1) {
				return nil, fmt.Errorf("HPAIntent %s: scheduled %v but its placement decides %v", name, ok, decided)
			}
			if ok {
				out = append(out, name)
			}
		}
		if len(out) != 1 {
			return out, fmt.Errorf("scheduled intents %v, want exactly one", out)
		}
		return out, nil
	}
	var winner []string
	e.eventually(func(ctx context.Context) error {
		var err error
		winner, err = scheduled(ctx)
		return err
	})
	loser := names[0]
	if winner[0] == loser {
		loser = names[1]
	}
	in := e.waitIntent(loser, hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionFalse, "NoFeasibleCluster"))
	if want := "mt-burst/compute-xlarge: 0 free, 1 wanted"; !strings.Contains(scheduledMessage(in), want) {
		t.Errorf("Scheduled message of %s %q, want it to say %q", loser, scheduledMessage(in), want)
	}
	framework.Consistently(t, 2*time.Second, func(ctx context.Context) error {
		got, err := scheduled(ctx)
		if err == nil && !slices.Equal(got, winner) {
			err = fmt.Errorf("scheduled intents changed from %v to %v", winner, got)
		}
		return err
	})
}

// TestMachineReservationsSurviveRestart: a placement takes cluster1's one free compute-xlarge
// and the hub stops before any guest starts. A new hub (a restart, or a new leader) schedules a
// second intent that prefers cluster1 (an optional compute-large only cluster1 has): only the
// reservation the first hub persisted in the intent's status, read back by the new hub, sends
// it to cluster2.
func TestMachineReservationsSurviveRestart(t *testing.T) {
	const group = "mt-restart"
	e := newEnv(t, "mt-restart")
	e.machineGroupOn(0, group, machineUsage{name: "compute-xlarge", maximum: 2, reserved: 1, used: 1},
		machineUsage{name: "compute-large", maximum: 1, reserved: 1})
	e.machineGroupOn(1, group, machineUsage{name: "compute-xlarge", maximum: 1, reserved: 1})
	e.waitInventories()
	stop := framework.RunHub(t, fleet.Hub.AdminConfig())

	e.createIntent(machineIntent("mt-restart-0", 1, group, "compute-xlarge"))
	e.createPlacement(onClusters("mt-restart-0", cluster(0)))
	e.waitDecided("mt-restart-0", cluster(0))
	e.waitIntent("mt-restart-0", func(in *v1alpha1.HPAIntent) error {
		want := resource.MustParse("1")
		if len(in.Status.Reservations) != 1 || in.Status.Reservations[0].ClusterName != cluster(0) ||
			in.Status.Reservations[0].RequestedBefore.Name("machines.fleetfit.io/mt-restart.compute-xlarge", resource.DecimalSI).Cmp(want) != 0 {
			return fmt.Errorf("status.reservations %v, want one on %s from 1 machine in use", in.Status.Reservations, cluster(0))
		}
		return nil
	})
	stop()

	framework.RunHub(t, fleet.Hub.AdminConfig())
	e.createIntent(oneConsumer("mt-restart-1", 1,
		utiltesting.MakeMachineTypeRequirement("xl", group, "compute-xlarge").Obj(),
		utiltesting.MakeMachineTypeRequirement("large", group, "compute-large").Optional(10).Obj()))
	e.createPlacement(onClusters("mt-restart-1", cluster(0), cluster(1)).NumberOfClusters(1).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("HardwareFit", 1))
	e.waitDecided("mt-restart-1", cluster(1))
	e.waitDecided("mt-restart-0", cluster(0))
}

// machineRunFleetfit runs the fleetfit command line in-process, as a user would, and returns
// what it printed on standard output.
func machineRunFleetfit(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	root := cli.NewCommand()
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("fleetfit %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	t.Logf("fleetfit %s\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// machineKubeconfig writes a kubeconfig of the hub's admin and returns its path.
func machineKubeconfig(t *testing.T) string {
	t.Helper()
	raw, err := framework.Kubeconfig(fleet.Hub.AdminConfig(), "hub")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
