package resource

import (
	"testing"
	"time"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestClusterChanged(t *testing.T) {
	fresh := now.Add(-time.Minute)
	info := func(inv *fleetfitv1alpha1.ClusterInventory) *framework.ClusterInfo {
		return framework.NewClusterInfo(cpu("a", "8"), nil, inv)
	}
	tests := map[string]struct {
		prioritizer      string
		old, new         *fleetfitv1alpha1.ClusterInventory
		decides, follows bool
		want             framework.QueueingHint
	}{
		"a heartbeat of a decided cluster": {
			prioritizer: AllocatableCPU, decides: true,
			old: inventory("a", fresh, [3]string{"cpu", "8", "4"}), new: inventory("a", now, [3]string{"cpu", "8", "4"}),
			want: framework.QueueSkip,
		},
		"free cpu changes on a decided cluster": {
			prioritizer: AllocatableCPU, decides: true,
			old: inventory("a", fresh, [3]string{"cpu", "8", "4"}), new: inventory("a", now, [3]string{"cpu", "8", "3900m"}),
			want: framework.Queue,
		},
		"free cpu changes on a cluster a pinned placement does not decide": {
			prioritizer: AllocatableCPU,
			old:         inventory("a", fresh, [3]string{"cpu", "8", "4"}), new: inventory("a", now, [3]string{"cpu", "8", "6"}),
			want: framework.QueueSkip,
		},
		"free cpu changes for a placement that follows its scores": {
			prioritizer: AllocatableCPU, follows: true,
			old: inventory("a", fresh, [3]string{"cpu", "8", "4"}), new: inventory("a", now, [3]string{"cpu", "8", "6"}),
			want: framework.Queue,
		},
		"another resource changes": {
			prioritizer: AllocatableMemory, decides: true,
			old:  inventory("a", fresh, [3]string{"cpu", "8", "4"}, [3]string{"memory", "32Gi", "16Gi"}),
			new:  inventory("a", now, [3]string{"cpu", "8", "2"}, [3]string{"memory", "32Gi", "16Gi"}),
			want: framework.QueueSkip,
		},
		"the ratio's allocatable changes": {
			prioritizer: RatioCPU, decides: true,
			old: inventory("a", fresh, [3]string{"cpu", "8", "4"}), new: inventory("a", now, [3]string{"cpu", "16", "4"}),
			want: framework.Queue,
		},
		"the report comes back from stale: the value read switches from the ManagedCluster's": {
			prioritizer: AllocatableCPU, decides: true,
			old: inventory("a", now.Add(-time.Hour), [3]string{"cpu", "8", "4"}), new: inventory("a", now, [3]string{"cpu", "8", "4"}),
			want: framework.Queue,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			factory := map[string]func() (framework.Plugin, error){
				AllocatableCPU:    func() (framework.Plugin, error) { return NewAllocatableCPU(nil, framework.Args{}) },
				AllocatableMemory: func() (framework.Plugin, error) { return NewAllocatableMemory(nil, framework.Args{}) },
				RatioCPU:          func() (framework.Plugin, error) { return NewRatioCPU(nil, framework.Args{}) },
			}[tc.prioritizer]
			p, err := factory()
			if err != nil {
				t.Fatal(err)
			}
			ev := framework.ClusterEvent{Old: info(tc.old), New: info(tc.new), Now: now}
			target := &framework.Target{Request: &framework.Request{Placement: st.MakePlacement("p", "ns").Obj(), Now: now},
				Decides: tc.decides, Follows: tc.follows}
			if got := p.(framework.EnqueueExtensions).ClusterChanged(ev, target); got != tc.want {
				t.Errorf("ClusterChanged() = %v, want %v", got, tc.want)
			}
		})
	}
}
