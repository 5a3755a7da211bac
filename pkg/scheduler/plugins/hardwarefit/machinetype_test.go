package hardwarefit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// offering is a cluster with one 8-core node that offers general-machine with the given types.
func offering(name string, types ...fleetfitv1alpha1.ReportedMachineType) cluster {
	c := reporting(name, nodes("n", 1, cpuNode("8")))
	c.inv.Status.MachineGroups = []fleetfitv1alpha1.ReportedMachineGroup{st.MakeReportedMachineGroup("general-machine", types...)}
	return c
}

// xlargeFree is compute-xlarge with free machines and as many used.
func xlargeFree(free int32) fleetfitv1alpha1.ReportedMachineType {
	return st.MakeReportedMachineType("compute-xlarge", 2*free, free, free)
}

// machineConsumer is a consumer whose replicas each take a compute-xlarge of general-machine.
func machineConsumer(name string, replicas int32) *st.ConsumerWrapper {
	return st.MakeConsumer(name).Target("Deployment", name, "main").Replicas(replicas).
		Requirement(st.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge").Obj())
}

// machineReservation is a reservation by placement of replicas compute-xlarge.
func machineReservation(t *testing.T, placement string, replicas int32) framework.Reservation {
	t.Helper()
	compiled, err := hpa.Compile(intent(machineConsumer("other", replicas)))
	if err != nil {
		t.Fatal(err)
	}
	cs := &compiled.Consumers[0]
	return framework.Reservation{Placement: placement, Request: cs.Request, Replicas: int64(cs.Replicas),
		Amounts: cs.Amounts(), Until: now.Add(time.Minute)}
}

func TestFilterMachineTypes(t *testing.T) {
	tests := map[string]struct {
		clusters    []cluster
		intents     []*fleetfitv1alpha1.HPAIntent
		decided     []string
		want        []string
		wantReasons map[string]string
	}{
		"the cluster with two free machines, not the one with one": {
			clusters: []cluster{offering("one", xlargeFree(1)), offering("two", xlargeFree(2)), reporting("none", nodes("n", 1, cpuNode("64")))},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(machineConsumer("trainer", 2))},
			want:     []string{"two"},
			wantReasons: map[string]string{
				"one":  "consumer app/trainer: general-machine/compute-xlarge: 1 free, 2 wanted",
				"none": "consumer app/trainer: cluster reports no machine group general-machine",
			},
		},
		"a group without the type": {
			clusters: []cluster{offering("medium", st.MakeReportedMachineType("compute-medium", 4, 4, 0))},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(machineConsumer("trainer", 1))},
			wantReasons: map[string]string{
				"medium": "consumer app/trainer: machine group general-machine has no type compute-xlarge",
			},
		},
		"two consumers of one intent share the free machines": {
			clusters: []cluster{offering("three", xlargeFree(3)), offering("four", xlargeFree(4))},
			intents:  []*fleetfitv1alpha1.HPAIntent{intent(machineConsumer("trainer", 2), machineConsumer("eval", 2))},
			want:     []string{"four"},
			wantReasons: map[string]string{
				"three": "consumer app/eval: general-machine/compute-xlarge: 1 free, 2 wanted (3 reported free, 2 of them taken by other consumers and in-flight placements)",
			},
		},
		"another placement's reservation takes free machines": {
			clusters: []cluster{
				offering("reserved", xlargeFree(2)).reserving(machineReservation(t, "ns/other", 1)),
				offering("own", xlargeFree(2)).reserving(machineReservation(t, placementKey, 2)),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(machineConsumer("trainer", 2))},
			want:    []string{"own"},
			wantReasons: map[string]string{
				"reserved": "consumer app/trainer: general-machine/compute-xlarge: 1 free, 2 wanted (2 reported free, 1 of them taken by other consumers and in-flight placements)",
			},
		},
		"a decided cluster keeps passing while it reports the type": {
			clusters: []cluster{
				offering("taken", xlargeFree(0)),
				offering("gone", st.MakeReportedMachineType("compute-medium", 1, 1, 0)),
				offering("fresh", xlargeFree(0)),
			},
			intents: []*fleetfitv1alpha1.HPAIntent{intent(machineConsumer("trainer", 2))},
			decided: []string{"taken", "gone"},
			want:    []string{"taken"},
			wantReasons: map[string]string{
				"gone":  "consumer app/trainer: machine group general-machine has no type compute-xlarge",
				"fresh": "consumer app/trainer: general-machine/compute-xlarge: 0 free, 2 wanted",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.clusters)
			req := request(snap, tc.intents, tc.decided...)
			rec := &recorder{snap: snap, reasons: map[string]string{}}
			got, status := newPlugin(t).Filter(t.Context(), framework.NewCycleState(), snap, req,
				framework.NewFullBitset(snap.NumClusters()), rec)
			if !status.IsSuccess() {
				t.Fatalf("Filter: %v", status.AsError())
			}
			if diff := cmp.Diff(tc.want, names(snap, got)); diff != "" {
				t.Errorf("feasible clusters (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReasons, rec.reasons); diff != "" {
				t.Errorf("rejection reasons (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestScoreMachineTypes(t *testing.T) {
	clusters := []cluster{
		offering("xl-and-large", xlargeFree(2), st.MakeReportedMachineType("compute-large", 2, 2, 0)),
		offering("one-large", xlargeFree(2), st.MakeReportedMachineType("compute-large", 1, 1, 0)),
		offering("xl-only", xlargeFree(2)),
		reporting("no-group", nodes("n", 1, cpuNode("8"))),
	}
	tests := map[string]struct {
		consumer *st.ConsumerWrapper
		want     map[string]int64
	}{
		"an optional machine type scores where every replica gets a free one": {
			consumer: machineConsumer("trainer", 2).
				Requirement(st.MakeMachineTypeRequirement("large", "general-machine", "compute-large").Optional(3).Obj()).
				Requirement(st.MakeMachineTypeRequirement("xl-too", "general-machine", "compute-xlarge").Optional(1).Obj()),
			want: map[string]int64{"xl-and-large": 100, "one-large": 25, "xl-only": 25, "no-group": 0},
		},
		"a consumer whose only machine type is optional": {
			consumer: st.MakeConsumer("web").Target("Deployment", "web", "main").Replicas(1).
				Requirement(feature(gpuProduct, "DoesNotExist")).
				Requirement(st.MakeMachineTypeRequirement("large", "general-machine", "compute-large").Optional(1).Obj()),
			want: map[string]int64{"xl-and-large": 100, "one-large": 100, "xl-only": 0, "no-group": 0},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(clusters)
			scores := make([]int64, snap.NumClusters())
			status := newPlugin(t).Score(t.Context(), framework.NewCycleState(), snap,
				request(snap, []*fleetfitv1alpha1.HPAIntent{intent(tc.consumer)}), framework.NewFullBitset(snap.NumClusters()), scores)
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
