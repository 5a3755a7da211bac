package machinegroup

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// TestNodePoolGroupAdmission checks what the MachineGroup CRD refuses, and
// that the API server's message says what is wrong where.
func TestNodePoolGroupAdmission(t *testing.T) {
	valid := func() *v1alpha1.MachineGroup {
		return makeGroup("adm", "small", "large").Node("adm-a", "small", ready, false).Obj()
	}
	cases := map[string]struct {
		edit func(g *v1alpha1.MachineGroup)
		// want are parts of the refusal's message, each of which must occur.
		want []string
	}{
		"valid": {edit: func(*v1alpha1.MachineGroup) {}},
		"unknown machine type in a pool entry": {
			edit: func(g *v1alpha1.MachineGroup) { g.Spec.NodePools[0].MachineType[0].Name = "huge" },
			want: []string{"spec.nodePools", "machine type huge of a node pool entry is not defined in machineTypes"},
		},
		"two machine types in one entry": {
			edit: func(g *v1alpha1.MachineGroup) {
				g.Spec.NodePools[0].MachineType = []v1alpha1.MachineTypeRef{{Name: "small"}, {Name: "large"}}
			},
			want: []string{"spec.nodePools[0].machineType", "must have at most 1 item"},
		},
		"entry without machine type": {
			edit: func(g *v1alpha1.MachineGroup) { g.Spec.NodePools[0].MachineType = nil },
			want: []string{"spec.nodePools[0].machineType", "Required value"},
		},
		"duplicate machine type names": {
			edit: func(g *v1alpha1.MachineGroup) { g.Spec.MachineTypes[1].Name = "small" },
			want: []string{"spec.machineTypes[1]", "Duplicate value", `"small"`},
		},
		"duplicate node names": {
			edit: func(g *v1alpha1.MachineGroup) {
				g.Spec.NodePools = append(g.Spec.NodePools, g.Spec.NodePools[0])
			},
			want: []string{"spec.nodePools[1]", "Duplicate value", `"adm-a"`},
		},
		"negative cpu": {
			edit: func(g *v1alpha1.MachineGroup) { g.Spec.MachineTypes[0].Spec.CPU = resource.MustParse("-1") },
			want: []string{"spec.machineTypes[0].spec", "cpu and memory must not be negative"},
		},
		"negative memory": {
			edit: func(g *v1alpha1.MachineGroup) { g.Spec.MachineTypes[0].Spec.Memory = resource.MustParse("-1Gi") },
			want: []string{"spec.machineTypes[0].spec", "cpu and memory must not be negative"},
		},
		"negative available": {
			edit: func(g *v1alpha1.MachineGroup) { g.Spec.MachineTypes[0].Available = -1 },
			want: []string{"spec.machineTypes[0].available", "should be greater than or equal to 0"},
		},
		"no GPUs": {
			edit: func(g *v1alpha1.MachineGroup) {
				g.Spec.MachineTypes[0].Spec.GPU = &v1alpha1.MachineGPU{Type: "nvidia.com/gpu", Num: 0}
			},
			want: []string{"spec.machineTypes[0].spec.gpu.num", "should be greater than or equal to 1"},
		},
		"GPU selected twice": {
			edit: func(g *v1alpha1.MachineGroup) {
				g.Spec.MachineTypes[0].Spec.GPU = &v1alpha1.MachineGPU{Num: 1, Product: "NVIDIA-A100", Family: "ampere"}
			},
			want: []string{"spec.machineTypes[0].spec.gpu", "select GPUs by at most one of product, family or machine"},
		},
		"invalid mode": {
			edit: func(g *v1alpha1.MachineGroup) { g.Spec.NodePools[0].Mode = "draining" },
			want: []string{"spec.nodePools[0].mode", `supported values: "ready", "maintenance"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := valid()
			tc.edit(g)
			created, err := fleetfit().FleetfitV1alpha1().MachineGroups().Create(t.Context(), g,
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid group refused: %v", err)
				}
				if created.Spec.NodePools[0].Mode != ready {
					t.Errorf("mode %q, want the default %q", created.Spec.NodePools[0].Mode, ready)
				}
				return
			}
			if err == nil {
				t.Fatalf("group admitted, want a refusal saying %q", tc.want)
			}
			t.Logf("refusal: %v", err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
		})
	}
}
