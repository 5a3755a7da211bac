package candidatescmd

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fleetfit/fleetfit/pkg/allocationcandidates"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestTableGroupsOnOneNode: two groups that share a node (group_policy=none) are printed
// apart, each with its own amounts, and quantities as Kubernetes writes them.
func TestTableGroupsOnOneNode(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	node := ut.MakeNode("n").Label("fleetfit.io/name", "n").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").Obj()
	pod := ut.MakePod("ns", "p", "n", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")})
	info := framework.NewClusterInfo(ut.MakeCluster("c").Available().Obj(), nil, ut.MakeInventory("c", now, []*corev1.Node{node}, pod))
	snap := framework.NewSnapshot(framework.SnapshotInput{Clusters: []*framework.ClusterInfo{info}})
	q, err := allocationcandidates.ParseQuery("resources=VCPU:1&resources1=memory:4Gi,cpu:500m&group_policy=none")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := allocationcandidates.Evaluate(t.Context(), snap, q, now, allocationcandidates.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.AllocationRequests) != 1 || len(resp.AllocationRequests[0].Allocations) != 1 {
		t.Fatalf("got %+v, want one candidate on one node", resp.AllocationRequests)
	}
	var id string
	for k := range resp.AllocationRequests[0].Allocations {
		id = k
	}
	var b strings.Builder
	if err := printTable(&b, q, resp); err != nil {
		t.Fatal(err)
	}
	short := strings.TrimPrefix(id, "c/")
	wantTable := [][]string{
		{"CLUSTER", "RESOURCES", "RESOURCES1"},
		{"c", short + ":", "cpu", "1", short + ":", "cpu", "500m,", "memory", "4Gi"},
	}
	var gotTable [][]string
	for line := range strings.Lines(b.String()) {
		gotTable = append(gotTable, strings.Fields(line))
	}
	if diff := cmp.Diff(wantTable, gotTable); diff != "" {
		t.Errorf("table (-want,+got):\n%s", diff)
	}
}
