package allocationcandidates

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

const (
	vf     = "example.com/vf"
	egress = "example.com/egress"
	gpu    = "nvidia.com/gpu"
	name   = "fleetfit.io/name"
)

// pf is one of the physical functions of OpenStack's spec as a node: SR-IOV VFs and egress bandwidth,
// on a physical network, maybe with SSL acceleration. Every node has its own name label, so
// every node is its own shape and provider ids can be read back as node names.
func pf(n, net string, ssl bool, vfs, bw string) *corev1.Node {
	w := ut.MakeNode(n).Label(name, n).Label("fleetfit.io/net", net).
		Resource(vf, vfs).Resource(egress, bw).Resource(corev1.ResourceCPU, "8")
	if ssl {
		w.Label("fleetfit.io/ssl", "true")
	}
	return w.Obj()
}

// seedNodes is the wiring diagram of OpenStack's spec: RP1..RP4 on one compute node (here, one cluster).
func seedNodes(vfs string) []*corev1.Node {
	return []*corev1.Node{
		pf("rp1", "net1", true, vfs, "1250000000"),
		pf("rp2", "net2", true, vfs, "1250000000"),
		pf("rp3", "net1", false, vfs, "125000000"),
		pf("rp4", "net2", false, vfs, "125000000"),
	}
}

type clusterSpec struct {
	nodes        []*corev1.Node
	pods         []*corev1.Pod
	unavailable  bool
	stale        bool
	set          string
	reservations []framework.Reservation
	// reports are label keys the cluster's agent reports besides its default prefixes.
	reports []string
}

func snapshot(t testing.TB, clusters map[string]clusterSpec) *framework.Snapshot {
	t.Helper()
	var infos []*framework.ClusterInfo
	var sets []*clusterv1beta2.ManagedClusterSet
	seen := map[string]bool{}
	for cname, spec := range clusters {
		cw := ut.MakeCluster(cname)
		if spec.unavailable {
			cw.Condition(clusterv1.ManagedClusterConditionAvailable, metav1.ConditionFalse, "Lost", "lost")
		} else {
			cw.Available()
		}
		if spec.set != "" {
			cw.ClusterSet(spec.set)
			if !seen[spec.set] {
				seen[spec.set] = true
				sets = append(sets, ut.MakeExclusiveClusterSet(spec.set))
			}
		}
		observed := now
		if spec.stale {
			observed = now.Add(-time.Hour)
		}
		inv := ut.MakeInventory(cname, observed, spec.nodes, spec.pods...)
		if len(spec.reports) > 0 {
			inv.Status.ReportedLabels.Keys = append(inv.Status.ReportedLabels.Keys, spec.reports...)
		}
		info := framework.NewClusterInfo(cw.Obj(), nil, inv)
		info.Reservations = spec.reservations
		infos = append(infos, info)
	}
	return framework.NewSnapshot(framework.SnapshotInput{Clusters: infos, Sets: sets})
}

// describe renders each candidate as "cluster: group=node+node ..." with nodes by their name
// label and groups in suffix order ("" first), sorted; and checks the response's invariants.
func describe(t *testing.T, resp *Response) []string {
	t.Helper()
	var out []string
	for _, ar := range resp.AllocationRequests {
		groups := slices.Sorted(func(yield func(string) bool) {
			for g := range ar.Mappings {
				if !yield(g) {
					return
				}
			}
		})
		cluster := ""
		var parts []string
		for _, g := range groups {
			var nodes []string
			for _, id := range ar.Mappings[g] {
				sum, ok := resp.ProviderSummaries[id]
				if !ok {
					t.Fatalf("provider %s has no summary", id)
				}
				if _, ok := ar.Allocations[id]; !ok {
					t.Fatalf("provider %s is mapped but has no allocation", id)
				}
				cluster = sum.RootProviderUUID
				if sum.ParentProviderUUID == nil || *sum.ParentProviderUUID != cluster || !strings.HasPrefix(id, cluster+"/") {
					t.Fatalf("provider %s is not a child of its cluster %s", id, cluster)
				}
				n := id
				for _, tr := range sum.Traits {
					if v, ok := strings.CutPrefix(tr, name+"="); ok {
						n = v
					}
				}
				nodes = append(nodes, n)
			}
			label := g
			if g == "" {
				label = "_"
			}
			parts = append(parts, label+"="+strings.Join(nodes, "+"))
		}
		out = append(out, cluster+": "+strings.Join(parts, " "))
	}
	slices.Sort(out)
	return out
}

func TestEvaluateSeedExamples(t *testing.T) {
	cpuNode := ut.MakeNode("cpu").Label(name, "cpu").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").
		Label("feature.node.kubernetes.io/cpu-cpuid.AVX2", "true").Obj()
	gpuNode := ut.MakeNode("gpu").Label(name, "gpu").Resource(corev1.ResourceCPU, "2").Resource(corev1.ResourceMemory, "8Gi").
		Resource(gpu, "1").Taint(gpu, "present", corev1.TaintEffectNoSchedule).Obj()
	bigNode := ut.MakeNode("big").Label(name, "big").Resource(corev1.ResourceCPU, "16").Resource(corev1.ResourceMemory, "64Gi").
		Resource(gpu, "2").Taint(gpu, "present", corev1.TaintEffectNoSchedule).Obj()
	twoVF := func(n string) *corev1.Node {
		return ut.MakeNode(n).Label("fleetfit.io/net", "net1").Resource(vf, "4").Obj()
	}
	cases := map[string]struct {
		clusters map[string]clusterSpec
		query    string
		want     []string
	}{
		"use case 1: a VF on each network, every combination": {
			clusters: map[string]clusterSpec{"cn1": {nodes: seedNodes("16")}},
			query:    "resources1=example.com/vf:1&required1=fleetfit.io/net=net1&resources2=example.com/vf:1&required2=fleetfit.io/net=net2&group_policy=none",
			want:     []string{"cn1: 1=rp1 2=rp2", "cn1: 1=rp1 2=rp4", "cn1: 1=rp3 2=rp2", "cn1: 1=rp3 2=rp4"},
		},
		"use case 2: two classes of one numbered group from one node": {
			clusters: map[string]clusterSpec{"cn1": {nodes: seedNodes("16")}},
			query:    "resources1=example.com/vf:1,example.com/egress:10000",
			want:     []string{"cn1: 1=rp1", "cn1: 1=rp2", "cn1: 1=rp3", "cn1: 1=rp4"},
		},
		"use case 3: traits per group": {
			clusters: map[string]clusterSpec{"cn1": {nodes: seedNodes("16")}},
			query: "resources1=example.com/vf:1,example.com/egress:10000&required1=fleetfit.io/net=net1" +
				"&resources2=example.com/vf:1,example.com/egress:20000&required2=fleetfit.io/net=net2,fleetfit.io/ssl=true&group_policy=isolate",
			want: []string{"cn1: 1=rp1 2=rp2", "cn1: 1=rp3 2=rp2"},
		},
		"use case 4: saturated, four VFs on NET1 as two numbered groups": {
			clusters: map[string]clusterSpec{"cn1": {nodes: seedNodes("2")}},
			query:    "resources1=example.com/vf:2&required1=fleetfit.io/net=net1&resources2=example.com/vf:2&required2=fleetfit.io/net=net1&group_policy=isolate",
			want:     []string{"cn1: 1=rp1 2=rp3", "cn1: 1=rp3 2=rp1"},
		},
		"fragmentation: enough in total but not on one node": {
			clusters: map[string]clusterSpec{"cn1": {nodes: seedNodes("2")}},
			query:    "resources=example.com/vf:4&required=fleetfit.io/net=net1",
			want:     nil,
		},
		"none lets two groups share a node": {
			clusters: map[string]clusterSpec{"cn1": {nodes: []*corev1.Node{twoVF("a")}}},
			query:    "resources1=example.com/vf:2&resources2=example.com/vf:2&group_policy=none",
			want:     []string{"cn1: 1=cn1/SHAPE/0 2=cn1/SHAPE/0"},
		},
		"isolate needs two nodes": {
			clusters: map[string]clusterSpec{"cn1": {nodes: []*corev1.Node{twoVF("a")}}},
			query:    "resources1=example.com/vf:2&resources2=example.com/vf:2&group_policy=isolate",
			want:     nil,
		},
		"isolate takes two nodes of one shape": {
			clusters: map[string]clusterSpec{"cn1": {nodes: []*corev1.Node{twoVF("a"), twoVF("b")}}},
			query:    "resources1=example.com/vf:2&resources2=example.com/vf:2&group_policy=isolate",
			want:     []string{"cn1: 1=cn1/SHAPE/0 2=cn1/SHAPE/1"},
		},
		"forbidden trait": {
			clusters: map[string]clusterSpec{"cn1": {nodes: seedNodes("16")}},
			query:    "resources1=example.com/vf:1&required1=!fleetfit.io/ssl",
			want:     []string{"cn1: 1=rp3", "cn1: 1=rp4"},
		},
		"any-of traits": {
			clusters: map[string]clusterSpec{"cn1": {nodes: seedNodes("16")}},
			query:    "resources1=example.com/vf:1&required1=in:fleetfit.io/net=net1,fleetfit.io/ssl",
			want:     []string{"cn1: 1=rp1", "cn1: 1=rp2", "cn1: 1=rp3"},
		},
		"repeated required parameters are ANDed": {
			clusters: map[string]clusterSpec{"cn1": {nodes: seedNodes("16")}},
			query:    "resources1=example.com/vf:1&required1=in:fleetfit.io/net=net1,fleetfit.io/ssl&required1=!fleetfit.io/net=net2",
			want:     []string{"cn1: 1=rp1", "cn1: 1=rp3"},
		},
		"one node when one can take the unnumbered group": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode, gpuNode, bigNode}}},
			query:    "resources=cpu:4,nvidia.com/gpu:1",
			want:     []string{"c: _=big"},
		},
		"spread when no node can take the unnumbered group": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode, gpuNode}}},
			query:    "resources=cpu:4,nvidia.com/gpu:1",
			want:     []string{"c: _=cpu+gpu"},
		},
		"the unnumbered group's traits hold for its nodes together": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode, gpuNode}}},
			query:    "resources=cpu:4,nvidia.com/gpu:1&required=HW_CPU_X86_AVX2",
			want:     []string{"c: _=cpu+gpu"},
		},
		"a numbered group's traits hold on its node": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode, gpuNode, bigNode}}},
			query:    "resources1=cpu:1,nvidia.com/gpu:1&required1=HW_CPU_X86_AVX2",
			want:     nil,
		},
		"a GPU taint keeps off groups that do not ask for a GPU": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode, gpuNode, bigNode}}},
			query:    "resources1=cpu:1",
			want:     []string{"c: 1=cpu"},
		},
		"other taints keep every group off": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{
				ut.MakeNode("t").Label(name, "t").Resource(gpu, "1").Taint("dedicated", "x", corev1.TaintEffectNoSchedule).Obj(),
			}}},
			query: "resources1=nvidia.com/gpu:1",
			want:  nil,
		},
		"aliases": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode, gpuNode, bigNode}}},
			query:    "resources1=VCPU:8,MEMORY_MB:32768",
			want:     []string{"c: 1=cpu"},
		},
		"reservations are not free": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode}, reservations: []framework.Reservation{
				{Placement: "ns/p", Request: cpuRequest(t, "6"), Replicas: 1, Until: now.Add(time.Minute)},
			}}},
			query: "resources1=cpu:4",
			want:  nil,
		},
		"lapsed reservations are": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode}, reservations: []framework.Reservation{
				{Placement: "ns/p", Request: cpuRequest(t, "6"), Replicas: 1, Until: now.Add(-time.Minute)},
			}}},
			query: "resources1=cpu:4",
			want:  []string{"c: 1=cpu"},
		},
		"requested pods are not free": {
			clusters: map[string]clusterSpec{"c": {nodes: []*corev1.Node{cpuNode}, pods: []*corev1.Pod{
				ut.MakePod("ns", "p", "cpu", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")}),
			}}},
			query: "resources1=cpu:4",
			want:  nil,
		},
		"unavailable clusters and stale inventories give nothing": {
			clusters: map[string]clusterSpec{
				"a": {nodes: []*corev1.Node{cpuNode}, unavailable: true},
				"b": {nodes: []*corev1.Node{cpuNode}, stale: true},
				"c": {nodes: []*corev1.Node{cpuNode}},
			},
			query: "resources=cpu:1",
			want:  []string{"c: _=cpu"},
		},
		"member_of": {
			clusters: map[string]clusterSpec{
				"a": {nodes: []*corev1.Node{cpuNode}, set: "east"},
				"b": {nodes: []*corev1.Node{cpuNode}, set: "west"},
				"c": {nodes: []*corev1.Node{cpuNode}},
			},
			query: "resources=cpu:1&member_of=in:east,west&member_of=!west",
			want:  []string{"a: _=cpu"},
		},
		"limit": {
			clusters: map[string]clusterSpec{
				"a": {nodes: []*corev1.Node{cpuNode}},
				"b": {nodes: []*corev1.Node{cpuNode}},
				"c": {nodes: []*corev1.Node{cpuNode}},
			},
			query: "resources=cpu:1&limit=2",
			want:  []string{"a: _=cpu", "b: _=cpu"},
		},
		"a label a cluster does not report decides nothing there": {
			clusters: map[string]clusterSpec{
				"a": {nodes: []*corev1.Node{cpuNode}, reports: []string{"example.com/secret"}},
				"c": {nodes: []*corev1.Node{cpuNode}},
			},
			query: "resources=cpu:1&required=!example.com/secret",
			want:  []string{"a: _=cpu"},
		},
	}
	for title, tc := range cases {
		t.Run(title, func(t *testing.T) {
			q, err := ParseQuery(tc.query)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := Evaluate(t.Context(), snapshot(t, tc.clusters), q, now, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			got := describe(t, resp)
			for i := range got {
				got[i] = shapeless(got[i])
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("candidates (-want,+got):\n%s", diff)
			}
		})
	}
}

// shapeless replaces the shape hashes of provider ids by SHAPE.
func shapeless(s string) string {
	parts := strings.Fields(s)
	for i, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		ids := strings.Split(v, "+")
		for j, id := range ids {
			if f := strings.Split(id, "/"); len(f) == 3 {
				f[1] = "SHAPE"
				ids[j] = strings.Join(f, "/")
			}
		}
		parts[i] = k + "=" + strings.Join(ids, "+")
	}
	return strings.Join(parts, " ")
}

func cpuRequest(t testing.TB, cpu string) *inventory.Request {
	t.Helper()
	r, err := inventory.NewRequest(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEvaluateResponseShape(t *testing.T) {
	node := ut.MakeNode("n").Label(name, "n").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").Obj()
	snap := snapshot(t, map[string]clusterSpec{"c": {nodes: []*corev1.Node{node}, pods: []*corev1.Pod{
		ut.MakePod("ns", "p", "n", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}),
	}}})
	q, err := ParseQuery("resources=VCPU:1&resources1=memory:4Gi,cpu:500m&group_policy=none")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := Evaluate(t.Context(), snap, q, now, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.AllocationRequests) != 1 {
		t.Fatalf("got %d candidates, want 1", len(resp.AllocationRequests))
	}
	ar := resp.AllocationRequests[0]
	var id string
	for k := range ar.Allocations {
		id = k
	}
	cluster := "c"
	want := AllocationRequest{
		Allocations: map[string]Allocation{id: {Resources: map[corev1.ResourceName]resource.Quantity{
			corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		}}},
		Mappings: map[string][]string{"": {id}, "1": {id}},
	}
	if diff := cmp.Diff(want, ar, cmp.AllowUnexported(AllocationRequest{}), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 }),
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".cluster" || p.Last().String() == ".groups" }, cmp.Ignore())); diff != "" {
		t.Errorf("allocation request (-want,+got):\n%s", diff)
	}
	wantSummary := &ProviderSummary{
		Resources: map[corev1.ResourceName]ResourceSummary{
			corev1.ResourceCPU:    {Capacity: resource.MustParse("8"), Used: resource.MustParse("2")},
			corev1.ResourceMemory: {Capacity: resource.MustParse("32Gi"), Used: resource.MustParse("0")},
			corev1.ResourcePods:   {Capacity: resource.MustParse("110"), Used: resource.MustParse("1")},
		},
		Traits:             []string{"fleetfit.io/name=n"},
		ParentProviderUUID: &cluster,
		RootProviderUUID:   cluster,
	}
	if diff := cmp.Diff(wantSummary, resp.ProviderSummaries[id], cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("node summary (-want,+got):\n%s", diff)
	}
	root := resp.ProviderSummaries[cluster]
	if root == nil || root.ParentProviderUUID != nil || root.RootProviderUUID != cluster || len(root.Resources) != 0 {
		t.Errorf("root summary = %+v, want a cluster with no inventory", root)
	}
}

// TestEvaluateLimitAcrossRounds: clusters are searched in rounds that grow; the limit keeps
// the first candidates in cluster order, whichever round found them.
func TestEvaluateLimitAcrossRounds(t *testing.T) {
	node := ut.MakeNode("n").Label(name, "n").Resource(corev1.ResourceCPU, "8").Obj()
	clusters := map[string]clusterSpec{}
	for i := range 40 {
		clusters[fmt.Sprintf("c%02d", i)] = clusterSpec{nodes: []*corev1.Node{node}}
	}
	snap := snapshot(t, clusters)
	for _, limit := range []int{1, 4, 5, 13, 39, 40, 41} {
		q, err := ParseQuery(fmt.Sprintf("resources=cpu:1&limit=%d", limit))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := Evaluate(t.Context(), snap, q, now, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := range min(limit, 40) {
			want = append(want, fmt.Sprintf("c%02d: _=n", i))
		}
		if diff := cmp.Diff(want, describe(t, resp)); diff != "" {
			t.Errorf("limit=%d (-want,+got):\n%s", limit, diff)
		}
		if want := 2 * min(limit, 40); len(resp.ProviderSummaries) != want {
			t.Errorf("limit=%d: %d provider summaries, want %d (a cluster and its node per candidate)", limit, len(resp.ProviderSummaries), want)
		}
	}
}
