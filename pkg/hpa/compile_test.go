package hpa

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// machineView is a cluster with one node in zone a and the group general-machine: two
// compute-xlarge free (one used) and one compute-large free.
func machineView() *inventory.View {
	st := utiltesting.InventoryStatus([]*corev1.Node{
		utiltesting.MakeNode("n").Resource(corev1.ResourceCPU, "8").Label("topology.kubernetes.io/zone", "a").Obj(),
	})
	st.MachineGroups = []v1alpha1.ReportedMachineGroup{utiltesting.MakeReportedMachineGroup("general-machine",
		utiltesting.MakeReportedMachineType("compute-xlarge", 3, 2, 1),
		utiltesting.MakeReportedMachineType("compute-large", 1, 1, 0),
	)}
	return inventory.NewView(&st)
}

func TestCompileMachineTypes(t *testing.T) {
	xlarge := inventory.MachineType{Group: "general-machine", Name: "compute-xlarge"}
	large := inventory.MachineType{Group: "general-machine", Name: "compute-large"}
	zone := func(value string) v1alpha1.ResourceRequirement {
		return utiltesting.MakeFeature("zone", "topology.kubernetes.io/zone").Values(value).Obj()
	}
	type optional struct {
		Name    string
		Machine *inventory.MachineType
		Meets   bool
	}
	type result struct {
		Machine  *inventory.MachineType
		Amounts  corev1.ResourceList
		Free     int64
		Optional []optional
	}
	tests := map[string]struct {
		consumer *utiltesting.ConsumerWrapper
		want     result
	}{
		"a mandatory machine type": {
			consumer: utiltesting.MakeConsumer("trainer").Target("Deployment", "trainer", "main").Replicas(2).
				Requirement(utiltesting.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge").Obj()),
			want: result{
				Machine: &xlarge,
				Amounts: corev1.ResourceList{"machines.fleetfit.io/general-machine.compute-xlarge": resource.MustParse("2")},
				Free:    2,
			},
		},
		"optional machine types score when every replica gets a free machine": {
			consumer: utiltesting.MakeConsumer("trainer").Target("Deployment", "trainer", "main").Replicas(2).
				Requirement(utiltesting.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge").Obj()).
				Requirement(utiltesting.MakeMachineTypeRequirement("large", "general-machine", "compute-large").Optional(3).Obj()).
				Requirement(utiltesting.MakeMachineTypeRequirement("xl-too", "general-machine", "compute-xlarge").Optional(1).Obj()),
			want: result{
				Machine: &xlarge,
				Amounts: corev1.ResourceList{"machines.fleetfit.io/general-machine.compute-xlarge": resource.MustParse("2")},
				Free:    2,
				Optional: []optional{
					{Name: "large", Machine: &large, Meets: false},
					{Name: "xl-too", Machine: &xlarge, Meets: true},
				},
			},
		},
		"an optional feature of a machine consumer asks for the type on such a node": {
			consumer: utiltesting.MakeConsumer("trainer").Target("Deployment", "trainer", "main").Replicas(1).
				Requirement(utiltesting.MakeMachineTypeRequirement("large", "general-machine", "compute-large").Obj()).
				Requirement(utiltesting.MakeFeature("in-a", "topology.kubernetes.io/zone").Values("a").Optional(2).Obj()).
				Requirement(utiltesting.MakeFeature("in-b", "topology.kubernetes.io/zone").Values("b").Optional(2).Obj()),
			want: result{
				Machine: &large,
				Amounts: corev1.ResourceList{"machines.fleetfit.io/general-machine.compute-large": resource.MustParse("1")},
				Free:    1,
				Optional: []optional{
					{Name: "in-a", Machine: &large, Meets: true},
					{Name: "in-b", Machine: &large, Meets: false},
				},
			},
		},
		"a mandatory feature applies to the machines too": {
			consumer: utiltesting.MakeConsumer("trainer").Target("Deployment", "trainer", "main").Replicas(1).
				Requirement(utiltesting.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge").Obj()).
				Requirement(zone("b")),
			want: result{
				Machine: &xlarge,
				Amounts: corev1.ResourceList{"machines.fleetfit.io/general-machine.compute-xlarge": resource.MustParse("1")},
				Free:    0,
			},
		},
		"only optional machine types: the consumer itself asks for no machine": {
			consumer: utiltesting.MakeConsumer("web").Target("Deployment", "web", "main").Replicas(1).
				Requirement(zone("a")).
				Requirement(utiltesting.MakeMachineTypeRequirement("large", "general-machine", "compute-large").Optional(1).Obj()),
			want: result{
				Amounts:  corev1.ResourceList{},
				Free:     0,
				Optional: []optional{{Name: "large", Machine: &large, Meets: true}},
			},
		},
	}
	v := machineView()
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			in := utiltesting.MakeHPAIntent("fwall", "ns").Placement("p").Consumer(tc.consumer.Obj()).Obj()
			compiled, err := Compile(in)
			if err != nil {
				t.Fatal(err)
			}
			c := &compiled.Consumers[0]
			var got result
			if m, ok := c.Request.MachineType(); ok {
				got.Machine = &m
			}
			got.Amounts = c.Amounts()
			got.Free, _ = v.FreeMachines(c.Request)
			for k := range c.Optional {
				o := &c.Optional[k]
				g := optional{Name: o.Name, Meets: c.MeetsOptional(v, o)}
				if m, ok := o.Request.MachineType(); ok {
					g.Machine = &m
				}
				got.Optional = append(got.Optional, g)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(got.Amounts, compiled.Amounts()); diff != "" {
				t.Errorf("intent amounts differ from its one consumer's (-consumer,+intent):\n%s", diff)
			}
		})
	}
}
