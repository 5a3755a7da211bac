package framework

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// machineCluster is a cluster whose agent reported a minute ago one 8-core node and the given
// machine groups.
func machineCluster(groups ...fleetfitv1alpha1.ReportedMachineGroup) *ClusterInfo {
	inv := st.MakeInventory("c1", now.Add(-time.Minute), []*corev1.Node{
		st.MakeNode("n").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").Obj(),
	})
	inv.Status.MachineGroups = groups
	return NewClusterInfo(st.MakeCluster("c1").Obj(), nil, inv)
}

// xlarge is general-machine with compute-xlarge of which free are free and used used.
func xlarge(free, used int32) fleetfitv1alpha1.ReportedMachineGroup {
	return st.MakeReportedMachineGroup("general-machine", st.MakeReportedMachineType("compute-xlarge", free+used, free, used))
}

// machineConsumers compiles the intent fwall with consumers, each named with the replicas of
// compute-xlarge it takes, each the one container of its own pod.
func machineConsumers(t *testing.T, replicas map[string]int32) []*hpa.Pod {
	t.Helper()
	w := st.MakeHPAIntent("fwall", "ns").Placement("p")
	for _, name := range []string{"trainer", "eval", "web"} {
		n, ok := replicas[name]
		if !ok {
			continue
		}
		c := st.MakeConsumer(name).Target("Deployment", name, "main").Replicas(n)
		if name == "web" {
			c.Requirement(st.MakeResource("cpu", "cpu").Requests("2").Obj())
		} else {
			c.Requirement(st.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge").Obj())
		}
		w.Consumer(c.Obj())
	}
	compiled, err := hpa.Compile(w.Obj())
	if err != nil {
		t.Fatal(err)
	}
	return podsOf(compiled)
}

func podsOf(compiled *hpa.Intent) []*hpa.Pod {
	out := make([]*hpa.Pod, len(compiled.Pods))
	for i := range compiled.Pods {
		out[i] = &compiled.Pods[i]
	}
	return out
}

func TestFitsHardwareMachineTypes(t *testing.T) {
	type result struct {
		Fits bool
		Why  string
	}
	// reservation is what another placement (or this one) decided on the cluster: replicas
	// machines of compute-xlarge.
	type reservation struct {
		placement string
		replicas  int32
	}
	tests := map[string]struct {
		groups       []fleetfitv1alpha1.ReportedMachineGroup
		consumers    map[string]int32
		reservations []reservation
		decided      bool
		want         result
	}{
		"two free machines for two replicas": {
			groups:    []fleetfitv1alpha1.ReportedMachineGroup{xlarge(2, 0)},
			consumers: map[string]int32{"trainer": 2},
			want:      result{Fits: true},
		},
		"one free machine for two replicas": {
			groups:    []fleetfitv1alpha1.ReportedMachineGroup{xlarge(1, 3)},
			consumers: map[string]int32{"trainer": 2},
			want:      result{Why: "consumer fwall/trainer: general-machine/compute-xlarge: 1 free, 2 wanted"},
		},
		"no machine group": {
			consumers: map[string]int32{"trainer": 1},
			want:      result{Why: "consumer fwall/trainer: cluster reports no machine group general-machine"},
		},
		"the group has no such type": {
			groups: []fleetfitv1alpha1.ReportedMachineGroup{st.MakeReportedMachineGroup("general-machine",
				st.MakeReportedMachineType("compute-medium", 4, 4, 0))},
			consumers: map[string]int32{"trainer": 1},
			want:      result{Why: "consumer fwall/trainer: machine group general-machine has no type compute-xlarge"},
		},
		"two consumers of one type do not count the same machine twice": {
			groups:    []fleetfitv1alpha1.ReportedMachineGroup{xlarge(3, 0)},
			consumers: map[string]int32{"trainer": 2, "eval": 2},
			want: result{Why: "consumer fwall/eval: general-machine/compute-xlarge: 1 free, 2 wanted " +
				"(3 reported free, 2 of them taken by other consumers and in-flight placements)"},
		},
		"two consumers of one type that fit together": {
			groups:    []fleetfitv1alpha1.ReportedMachineGroup{xlarge(4, 0)},
			consumers: map[string]int32{"trainer": 2, "eval": 2},
			want:      result{Fits: true},
		},
		"machines beside amounts: each counts its own": {
			groups:    []fleetfitv1alpha1.ReportedMachineGroup{xlarge(1, 0)},
			consumers: map[string]int32{"trainer": 1, "web": 4},
			want:      result{Fits: true},
		},
		"another placement's reservation takes a free machine": {
			groups:       []fleetfitv1alpha1.ReportedMachineGroup{xlarge(2, 0)},
			consumers:    map[string]int32{"trainer": 2},
			reservations: []reservation{{placement: "ns/other", replicas: 1}},
			want: result{Why: "consumer fwall/trainer: general-machine/compute-xlarge: 1 free, 2 wanted " +
				"(2 reported free, 1 of them taken by other consumers and in-flight placements)"},
		},
		"the placement's own reservation takes nothing from it": {
			groups:       []fleetfitv1alpha1.ReportedMachineGroup{xlarge(2, 0)},
			consumers:    map[string]int32{"trainer": 2},
			reservations: []reservation{{placement: "ns/p", replicas: 2}},
			want:         result{Fits: true},
		},
		"a decided cluster keeps passing with no machine free: its guests took them": {
			groups:    []fleetfitv1alpha1.ReportedMachineGroup{xlarge(0, 2)},
			consumers: map[string]int32{"trainer": 2},
			decided:   true,
			want:      result{Fits: true},
		},
		"a decided cluster that no longer reports the group is lost": {
			consumers: map[string]int32{"trainer": 2},
			decided:   true,
			want:      result{Why: "consumer fwall/trainer: cluster reports no machine group general-machine"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			info := machineCluster(tc.groups...)
			for _, r := range tc.reservations {
				cs := machineConsumers(t, map[string]int32{"trainer": r.replicas})[0]
				info.Reservations = append(info.Reservations, Reservation{
					Placement: r.placement, Request: cs.Request, Replicas: int64(cs.Replicas),
					Amounts: cs.Amounts(), Base: RequestedTotals(info.Inventory), Until: now.Add(time.Minute),
				})
			}
			var got result
			got.Fits, got.Why = info.FitsHardware(machineConsumers(t, tc.consumers), "ns/p", tc.decided, now)
			if fast := info.HardwareFits(machineConsumers(t, tc.consumers), "ns/p", tc.decided, now); fast != got.Fits {
				t.Errorf("HardwareFits = %t, FitsHardware = %t: the verdict without a reason differs", fast, got.Fits)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

// TestMachineReservationSeen checks that a reservation of machines ends once the cluster's
// machines in use have grown by its replicas, whatever its node totals do: a guest takes over a
// reservation pod of its own size.
func TestMachineReservationSeen(t *testing.T) {
	before := machineCluster(xlarge(3, 1))
	cs := machineConsumers(t, map[string]int32{"trainer": 2})[0]
	r := Reservation{Placement: "ns/p", Request: cs.Request, Replicas: 2, Amounts: cs.Amounts(),
		Base: RequestedTotals(before.Inventory), Until: now.Add(time.Minute)}
	tests := map[string]struct {
		groups []fleetfitv1alpha1.ReportedMachineGroup
		want   bool
	}{
		"nothing taken yet":         {groups: []fleetfitv1alpha1.ReportedMachineGroup{xlarge(3, 1)}, want: false},
		"one of two guests started": {groups: []fleetfitv1alpha1.ReportedMachineGroup{xlarge(2, 2)}, want: false},
		"both guests started":       {groups: []fleetfitv1alpha1.ReportedMachineGroup{xlarge(1, 3)}, want: true},
		"the group is gone":         {want: false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			after := machineCluster(tc.groups...)
			if got := r.Seen(RequestedTotals(after.Inventory)); got != tc.want {
				t.Errorf("Seen = %v, want %v", got, tc.want)
			}
		})
	}
}
