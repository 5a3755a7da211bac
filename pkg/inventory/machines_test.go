package inventory

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// machineGroup is a reported machine group whose types are given as name,
// reserved, used triples.
func machineGroup(name string, types ...any) v1alpha1.ReportedMachineGroup {
	g := v1alpha1.ReportedMachineGroup{Name: name, Ready: true}
	for i := 0; i+2 < len(types); i += 3 {
		reserved, used := int32(types[i+1].(int)), int32(types[i+2].(int))
		g.MachineTypes = append(g.MachineTypes, v1alpha1.ReportedMachineType{
			Name: types[i].(string),
			Spec: v1alpha1.MachineTypeSpec{CPU: resource.MustParse("8"), Memory: resource.MustParse("32Gi")},
			Usage: v1alpha1.MachineUsage{
				Maximum: reserved + used, Reserved: reserved, Used: used,
			},
		})
	}
	return g
}

// machineStatus is the report of a cluster with one plain node of 8 cores
// (labelled zone=a) and groups.
func machineStatus(t testing.TB, groups ...v1alpha1.ReportedMachineGroup) *v1alpha1.ClusterInventoryStatus {
	t.Helper()
	st := summarize(t, DefaultConfig(), []*corev1.Node{
		makeNode("n").Resources("cpu", "8", "memory", "32Gi", "pods", "110").Label("topology.kubernetes.io/zone", "a").Obj(),
	}, nil)
	st.MachineGroups = groups
	return &st
}

func mustMachineRequest(t testing.TB, group, name string, features ...corev1.NodeSelectorRequirement) *Request {
	t.Helper()
	r, err := NewMachineRequest(MachineType{Group: group, Name: name}, features)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestViewMachines(t *testing.T) {
	zoneA := req("topology.kubernetes.io/zone", corev1.NodeSelectorOpIn, "a")
	zoneB := req("topology.kubernetes.io/zone", corev1.NodeSelectorOpIn, "b")
	unreported := req("example.com/rack", corev1.NodeSelectorOpIn, "r1")
	groups := []v1alpha1.ReportedMachineGroup{
		machineGroup("general-machine", "compute-xlarge", 2, 1, "compute-medium", 0, 3),
		machineGroup("gpu-machine"),
	}
	type result struct {
		Free      int64
		Why       string
		Max       int64
		Fits      bool
		FitsWhy   string
		Offered   bool
		OfferWhy  string
		Placed    int64
		PlacedTwo int64
	}
	tests := map[string]struct {
		req  *Request
		want result
	}{
		"free machines are the reserved ones": {
			req:  mustMachineRequest(t, "general-machine", "compute-xlarge"),
			want: result{Free: 2, Max: 2, Fits: true, Offered: true, Placed: 2, PlacedTwo: 0},
		},
		"a type with every machine used has none free, but is still offered": {
			req: mustMachineRequest(t, "general-machine", "compute-medium"),
			want: result{Free: 0, Max: 0, FitsWhy: "general-machine/compute-medium: 0 free, 1 wanted", Offered: true,
				Placed: 0, PlacedTwo: 0},
		},
		"no such group": {
			req: mustMachineRequest(t, "other", "compute-xlarge"),
			want: result{Why: "cluster reports no machine group other", FitsWhy: "cluster reports no machine group other",
				OfferWhy: "cluster reports no machine group other"},
		},
		"no such type in a group": {
			req: mustMachineRequest(t, "gpu-machine", "compute-xlarge"),
			want: result{Why: "machine group gpu-machine has no type compute-xlarge",
				FitsWhy: "machine group gpu-machine has no type compute-xlarge", OfferWhy: "machine group gpu-machine has no type compute-xlarge"},
		},
		"features some schedulable node has": {
			req:  mustMachineRequest(t, "general-machine", "compute-xlarge", zoneA),
			want: result{Free: 2, Max: 2, Fits: true, Offered: true, Placed: 2},
		},
		"features no schedulable node has": {
			req: mustMachineRequest(t, "general-machine", "compute-xlarge", zoneB),
			want: result{
				Why:      "general-machine/compute-xlarge: no schedulable node with topology.kubernetes.io/zone In [b]",
				FitsWhy:  "general-machine/compute-xlarge: no schedulable node with topology.kubernetes.io/zone In [b]",
				OfferWhy: "general-machine/compute-xlarge: no schedulable node with topology.kubernetes.io/zone In [b]",
			},
		},
		"a feature on a label the cluster does not report": {
			req: mustMachineRequest(t, "general-machine", "compute-xlarge", unreported),
			want: result{Why: "the cluster does not report label example.com/rack yet", FitsWhy: "the cluster does not report label example.com/rack yet",
				OfferWhy: "the cluster does not report label example.com/rack yet"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := NewView(machineStatus(t, groups...))
			var got result
			got.Free, got.Why = v.FreeMachines(tc.req)
			got.Max, _ = v.MaxReplicas(tc.req)
			got.Fits, got.FitsWhy = v.FitsOnOneNode(tc.req)
			got.Offered, got.OfferWhy = v.OffersMachineType(tc.req)
			a := v.Allocate()
			got.Placed = a.Place(tc.req, 3)
			got.PlacedTwo = a.Place(tc.req, 1)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}

func TestAllocationPlaceMachines(t *testing.T) {
	xlarge := mustMachineRequest(t, "general-machine", "compute-xlarge")
	medium := mustMachineRequest(t, "general-machine", "compute-medium")
	cpu := mustRequest(t, rl("cpu", "8"), nil)
	type place struct {
		req      *Request
		replicas int64
	}
	tests := map[string]struct {
		groups []v1alpha1.ReportedMachineGroup
		steps  []place
		want   []int64
	}{
		"two consumers of one type share its free machines": {
			groups: []v1alpha1.ReportedMachineGroup{machineGroup("general-machine", "compute-xlarge", 3, 0)},
			steps:  []place{{xlarge, 2}, {xlarge, 2}, {xlarge, 1}},
			want:   []int64{2, 1, 0},
		},
		"types count apart": {
			groups: []v1alpha1.ReportedMachineGroup{machineGroup("general-machine", "compute-xlarge", 1, 0, "compute-medium", 1, 0)},
			steps:  []place{{xlarge, 1}, {medium, 1}, {xlarge, 1}},
			want:   []int64{1, 1, 0},
		},
		"machines take no node capacity": {
			groups: []v1alpha1.ReportedMachineGroup{machineGroup("general-machine", "compute-xlarge", 2, 0)},
			steps:  []place{{xlarge, 2}, {cpu, 1}, {cpu, 1}},
			want:   []int64{2, 1, 0},
		},
		"a reservation placed first leaves the rest": {
			groups: []v1alpha1.ReportedMachineGroup{machineGroup("general-machine", "compute-xlarge", 2, 0)},
			steps:  []place{{xlarge, 1}, {xlarge, 2}},
			want:   []int64{1, 1},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := NewView(machineStatus(t, tc.groups...))
			a := v.Allocate()
			var got []int64
			for _, s := range tc.steps {
				got = append(got, a.Place(s.req, s.replicas))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placed (-want,+got):\n%s", diff)
			}
			// Reset gives every machine back.
			a.Reset(v)
			if n, want := a.Place(tc.steps[0].req, tc.steps[0].replicas), tc.want[0]; n != want {
				t.Errorf("after Reset, placed %d, want %d", n, want)
			}
		})
	}
}

func TestMachinesInUse(t *testing.T) {
	st := machineStatus(t,
		machineGroup("general-machine", "compute-xlarge", 2, 1, "compute-medium", 0, 3),
		machineGroup("gpu-machine", "a100", 1, 0))
	got := map[corev1.ResourceName]int64{}
	MachinesInUse(st, got)
	want := map[corev1.ResourceName]int64{
		"machines.fleetfit.io/general-machine.compute-xlarge": 1000,
		"machines.fleetfit.io/general-machine.compute-medium": 3000,
		"machines.fleetfit.io/gpu-machine.a100":               0,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want,+got):\n%s", diff)
	}
}

func TestNewMachineRequestRejects(t *testing.T) {
	if _, err := NewMachineRequest(MachineType{Group: "g"}, nil); err == nil {
		t.Error("a machine type without a name was accepted")
	}
	if _, err := NewMachineRequest(MachineType{Group: "g", Name: "t"}, []corev1.NodeSelectorRequirement{{Key: "k", Operator: corev1.NodeSelectorOpIn}}); err == nil {
		t.Error("an In feature without values was accepted")
	}
}

func BenchmarkAllocationPlaceMachines(b *testing.B) {
	v := NewView(machineStatus(b, machineGroup("general-machine", "compute-xlarge", 8, 0, "compute-medium", 8, 0)))
	r := mustMachineRequest(b, "general-machine", "compute-xlarge")
	a := v.Allocate()
	b.ReportAllocs()
	for b.Loop() {
		a.Reset(v)
		a.Place(r, 2)
		a.Place(r, 2)
	}
}

// TestPlaceMachinesAllocatesNothing: placing machine requests, whether the cluster offers the
// type or not, allocates nothing once an Allocation has been reset, as HardwareFit does per
// cluster.
func TestPlaceMachinesAllocatesNothing(t *testing.T) {
	v := NewView(machineStatus(t, machineGroup("general-machine", "compute-xlarge", 2, 0)))
	requests := []*Request{
		mustMachineRequest(t, "general-machine", "compute-xlarge"),
		mustMachineRequest(t, "general-machine", "compute-medium"),
		mustMachineRequest(t, "other", "compute-xlarge"),
		mustMachineRequest(t, "general-machine", "compute-xlarge", req("topology.kubernetes.io/zone", corev1.NodeSelectorOpIn, "b")),
		mustMachineRequest(t, "general-machine", "compute-xlarge", req("example.com/rack", corev1.NodeSelectorOpIn, "r1")),
	}
	a := v.Allocate()
	if n := testing.AllocsPerRun(100, func() {
		a.Reset(v)
		for _, r := range requests {
			a.Place(r, 2)
		}
	}); n != 0 {
		t.Errorf("%v allocations per run, want none", n)
	}
}
