package resource

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache/cachetest"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var now = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const gpu = "nvidia.com/gpu"

// cpu returns a cluster with allocatable cpu (and the same capacity).
func cpu(name, allocatable string) *clusterv1.ManagedCluster {
	return st.MakeCluster(name).Resource(clusterv1.ResourceCPU, allocatable, allocatable).Obj()
}

// inventory returns a ClusterInventory of a cluster observed at the given time, with the
// given (name, allocatable, free) totals.
func inventory(cluster string, observedAt time.Time, totals ...[3]string) *fleetfitv1alpha1.ClusterInventory {
	inv := &fleetfitv1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: cluster}}
	inv.Status.ObservedAt = metav1.NewTime(observedAt)
	for _, t := range totals {
		inv.Status.Resources = append(inv.Status.Resources, fleetfitv1alpha1.ResourceTotals{
			Name:        corev1.ResourceName(t[0]),
			Capacity:    apiresource.MustParse(t[1]),
			Allocatable: apiresource.MustParse(t[1]),
			Free:        apiresource.MustParse(t[2]),
		})
	}
	return inv
}

func TestScore(t *testing.T) {
	tests := map[string]struct {
		builtIn     string
		clusters    []*clusterv1.ManagedCluster
		inventories []*fleetfitv1alpha1.ClusterInventory
		// feasible defaults to every cluster.
		feasible []string
		want     map[string]int64
	}{
		"allocatable cpu 10/20/30": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "10"), cpu("c2", "20"), cpu("c3", "30")},
			want:     map[string]int64{"c1": -100, "c2": 0, "c3": 100},
		},
		"equal amounts all score 100": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "8"), cpu("c2", "8000m")},
			want:     map[string]int64{"c1": 100, "c2": 100},
		},
		"milli-cpu": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "500m"), cpu("c2", "1500m"), cpu("c3", "2")},
			// (1000/1500 - 0.5) * 200 = 33.3
			want: map[string]int64{"c1": -100, "c2": 33, "c3": 100},
		},
		"truncates like OCM's float arithmetic": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "0"), cpu("c2", "7"), cpu("c3", "10")},
			// (0.7 - 0.5) * 2 * 100 is 39.99999999999999 in float64.
			want: map[string]int64{"c1": -100, "c2": 39, "c3": 100},
		},
		"cpu 1e19 is the most, not zero": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "1e19"), cpu("c2", "1"), cpu("c3", "1e308")},
			want:     map[string]int64{"c1": 100, "c2": -100, "c3": 100},
		},
		"exponents Quantity.Cmp takes minutes over": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "1e709551616"), cpu("c2", "-1e709551616"), cpu("c3", "0")},
			want:     map[string]int64{"c1": 100, "c2": -100, "c3": 0},
		},
		"amounts at both ends of int64 do not overflow": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "-9e15"), cpu("c2", "0"), cpu("c3", "9e15")},
			// hi−lo is 1.8e19 milli-cores, beyond MaxInt64; c2 is half way.
			want: map[string]int64{"c1": -100, "c2": 0, "c3": 100},
		},
		"amounts beyond int64 of opposite signs saturate": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "-1e19"), cpu("c2", "0"), cpu("c3", "1e19")},
			want:     map[string]int64{"c1": -100, "c2": 0, "c3": 100},
		},
		"a fresh inventory's free 1e19 is the most": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "1"), cpu("c2", "20"), cpu("c3", "10")},
			inventories: []*fleetfitv1alpha1.ClusterInventory{
				inventory("c1", now, [3]string{"cpu", "1e19", "1e19"}),
			},
			// c2 is a hair above the least, and truncation makes that -99.
			want: map[string]int64{"c1": 100, "c2": -99, "c3": -100},
		},
		"clusters without the resource get no score and do not set min": {
			builtIn: AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{
				cpu("c1", "10"),
				st.MakeCluster("c2").Obj(),
				// OCM skips a cluster without a capacity for the resource too.
				func() *clusterv1.ManagedCluster {
					c := cpu("c3", "1")
					delete(c.Status.Capacity, clusterv1.ResourceCPU)
					return c
				}(),
				cpu("c4", "30"),
			},
			want: map[string]int64{"c1": -100, "c2": 0, "c3": 0, "c4": 100},
		},
		"min and max over feasible clusters only": {
			builtIn:  AllocatableCPU,
			clusters: []*clusterv1.ManagedCluster{cpu("c1", "10"), cpu("c2", "20"), cpu("c3", "1000")},
			feasible: []string{"c1", "c2"},
			want:     map[string]int64{"c1": -100, "c2": 100},
		},
		"allocatable memory": {
			builtIn: AllocatableMemory,
			clusters: []*clusterv1.ManagedCluster{
				st.MakeCluster("c1").Resource(clusterv1.ResourceMemory, "1Gi", "1Gi").Obj(),
				st.MakeCluster("c2").Resource(clusterv1.ResourceMemory, "2Gi", "2Gi").Obj(),
				st.MakeCluster("c3").Resource(clusterv1.ResourceMemory, "4Gi", "4Gi").Obj(),
			},
			want: map[string]int64{"c1": -100, "c2": -33, "c3": 100},
		},
		"a fresh inventory's free amount replaces allocatable": {
			builtIn:     AllocatableCPU,
			clusters:    []*clusterv1.ManagedCluster{cpu("c1", "30"), cpu("c2", "20"), cpu("c3", "10")},
			inventories: []*fleetfitv1alpha1.ClusterInventory{inventory("c1", now.Add(-framework.InventoryStaleAfter), [3]string{"cpu", "30", "5"})},
			// c1 5, c2 20, c3 10: c3 is (10-5)/15 of the way.
			want: map[string]int64{"c1": -100, "c2": 100, "c3": -33},
		},
		"a stale inventory falls back to allocatable": {
			builtIn:     AllocatableCPU,
			clusters:    []*clusterv1.ManagedCluster{cpu("c1", "30"), cpu("c2", "20"), cpu("c3", "10")},
			inventories: []*fleetfitv1alpha1.ClusterInventory{inventory("c1", now.Add(-framework.InventoryStaleAfter-time.Second), [3]string{"cpu", "30", "5"})},
			want:        map[string]int64{"c1": 100, "c2": 0, "c3": -100},
		},
		"a fresh inventory without the resource means the cluster lacks it": {
			builtIn: Allocatable + ":" + gpu,
			clusters: []*clusterv1.ManagedCluster{
				st.MakeCluster("c1").Resource(gpu, "4", "4").Obj(),
				st.MakeCluster("c2").Resource(gpu, "1", "1").Obj(),
				st.MakeCluster("c3").Resource(gpu, "2", "2").Obj(),
			},
			inventories: []*fleetfitv1alpha1.ClusterInventory{inventory("c1", now, [3]string{"cpu", "8", "8"})},
			want:        map[string]int64{"c1": 0, "c2": -100, "c3": 100},
		},
		"allocatable of a named resource with inventories": {
			builtIn: Allocatable + ":" + gpu,
			clusters: []*clusterv1.ManagedCluster{
				st.MakeCluster("c1").Resource(gpu, "8", "8").Obj(),
				st.MakeCluster("c2").Resource(gpu, "8", "8").Obj(),
				st.MakeCluster("c3").Obj(),
			},
			inventories: []*fleetfitv1alpha1.ClusterInventory{
				inventory("c1", now, [3]string{gpu, "8", "0"}),
				inventory("c2", now.Add(time.Minute), [3]string{gpu, "8", "2"}),
			},
			want: map[string]int64{"c1": -100, "c2": 100, "c3": 0},
		},
		"ratio: free/allocatable with a fresh inventory, allocatable/capacity without": {
			builtIn: RatioCPU,
			clusters: []*clusterv1.ManagedCluster{
				cpu("c1", "8"),
				cpu("c2", "8"),
				st.MakeCluster("c3").Resource(clusterv1.ResourceCPU, "5", "10").Obj(),
				st.MakeCluster("c4").Obj(),
			},
			inventories: []*fleetfitv1alpha1.ClusterInventory{
				inventory("c1", now, [3]string{"cpu", "8", "2"}),
				inventory("c2", now, [3]string{"cpu", "8", "6"}),
			},
			// 0.25, 0.75, 0.5; c4 has no cpu.
			want: map[string]int64{"c1": -100, "c2": 100, "c3": 0, "c4": 0},
		},
		"ratio of memory, stale inventory and zero allocatable": {
			builtIn: RatioMemory,
			clusters: []*clusterv1.ManagedCluster{
				st.MakeCluster("c1").Resource(clusterv1.ResourceMemory, "4Gi", "16Gi").Obj(),
				st.MakeCluster("c2").Resource(clusterv1.ResourceMemory, "16Gi", "16Gi").Obj(),
				st.MakeCluster("c3").Obj(),
			},
			inventories: []*fleetfitv1alpha1.ClusterInventory{
				inventory("c2", now.Add(-time.Hour), [3]string{"memory", "16Gi", "1Gi"}),
				inventory("c3", now, [3]string{"memory", "0", "0"}),
			},
			want: map[string]int64{"c1": -100, "c2": 100, "c3": 0},
		},
		"ratio of a named resource, a single cluster scores 100": {
			builtIn:     Ratio + ":" + gpu,
			clusters:    []*clusterv1.ManagedCluster{st.MakeCluster("c1").Obj()},
			inventories: []*fleetfitv1alpha1.ClusterInventory{inventory("c1", now, [3]string{gpu, "4", "1"})},
			want:        map[string]int64{"c1": 100},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := cachetest.Fleet{Clusters: tc.clusters, Inventories: tc.inventories}.Snapshot()
			req := &framework.Request{
				Placement: st.MakePlacement("p", "ns").Obj(),
				Decided:   framework.NewBitset(snap.NumClusters()),
				Now:       now,
			}
			feasible := framework.NewFullBitset(snap.NumClusters())
			if tc.feasible != nil {
				feasible = snap.BitsetOf(tc.feasible)
			}
			p := newPlugin(t, tc.builtIn)
			if p.Name() != tc.builtIn {
				t.Errorf("Name() = %q, want %q", p.Name(), tc.builtIn)
			}
			scores := make([]int64, snap.NumClusters())
			if s := p.Score(t.Context(), framework.NewCycleState(), snap, req, feasible, scores); !s.IsSuccess() {
				t.Fatalf("Score: %v", s)
			}
			got := map[string]int64{}
			feasible.ForEach(func(i int) { got[snap.Cluster(i).Name()] = scores[i] })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("scores (-want,+got):\n%s", diff)
			}
		})
	}
}

var factories = map[string]framework.Factory{
	AllocatableCPU:    NewAllocatableCPU,
	AllocatableMemory: NewAllocatableMemory,
	Allocatable:       NewAllocatable,
	RatioCPU:          NewRatioCPU,
	RatioMemory:       NewRatioMemory,
	Ratio:             NewRatio,
}

// newPlugin creates a prioritizer from a builtIn name as the scheduler does.
func newPlugin(t *testing.T, builtIn string) framework.ScorePlugin {
	t.Helper()
	name, param, _ := strings.Cut(builtIn, ":")
	p, err := factories[name](nil, framework.Args{Param: param})
	if err != nil {
		t.Fatalf("creating %s: %v", builtIn, err)
	}
	return p.(framework.ScorePlugin)
}

func TestFactoryErrors(t *testing.T) {
	tests := map[string]struct {
		factory framework.Factory
		param   string
		wantErr bool
	}{
		"ResourceAllocatable needs a resource":     {factory: NewAllocatable, wantErr: true},
		"ResourceRatio needs a resource":           {factory: NewRatio, wantErr: true},
		"invalid resource name":                    {factory: NewAllocatable, param: "nvidia.com/gpu/x", wantErr: true},
		"invalid resource name with spaces":        {factory: NewRatio, param: "a b", wantErr: true},
		"ResourceAllocatableCPU takes no resource": {factory: NewAllocatableCPU, param: "memory", wantErr: true},
		"ResourceRatioMemory takes no resource":    {factory: NewRatioMemory, param: "cpu", wantErr: true},
		"extended resource":                        {factory: NewAllocatable, param: "nvidia.com/gpu"},
		"hugepages":                                {factory: NewRatio, param: "hugepages-2Mi"},
		"fixed resource":                           {factory: NewAllocatableMemory},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := tc.factory(nil, framework.Args{Param: tc.param})
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Errorf("error = %v, want error %t", err, tc.wantErr)
			}
		})
	}
}
