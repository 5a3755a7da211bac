package hpa

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestMachineGuest: only a mandatory machine type makes a consumer's pods guests, and a
// guest's labels name its group, type and container.
func TestMachineGuest(t *testing.T) {
	xl := func() *utiltesting.RequirementWrapper {
		return utiltesting.MakeMachineTypeRequirement("xl", "general-machine", "compute-xlarge")
	}
	cases := map[string]struct {
		consumer   *utiltesting.ConsumerWrapper
		wantGuest  bool
		wantLabels map[string]string
	}{
		"mandatory machine type": {
			consumer:  utiltesting.MakeConsumer("trainer").Target("Deployment", "train", "main").Requirement(xl().Obj()),
			wantGuest: true,
			wantLabels: map[string]string{
				machinegroup.LabelMachineGroup: "general-machine", machinegroup.LabelMachineType: "compute-xlarge",
				machinegroup.LabelPodRole: machinegroup.PodRoleGuest, machinegroup.LabelInjectingContainer: "main",
			},
		},
		"optional machine type": {
			consumer: utiltesting.MakeConsumer("trainer").Target("Deployment", "train", "main").Requirement(xl().Optional(5).Obj()),
		},
		"amounts": {
			consumer: utiltesting.MakeConsumer("web").Target("Deployment", "web", "app").
				Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, err := Resolve(utiltesting.MakeHPAIntent("in", "ns").Placement("p").Consumer(tc.consumer.Obj()).Obj())
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			c := &r.Consumers[0]
			if got := c.MachineGuest(); got != tc.wantGuest {
				t.Errorf("MachineGuest() = %t, want %t", got, tc.wantGuest)
			}
			if diff := cmp.Diff(tc.wantLabels, c.GuestLabels()); diff != "" {
				t.Errorf("GuestLabels (-want,+got):\n%s", diff)
			}
		})
	}
}
