package registration

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

const gpu corev1.ResourceName = "nvidia.com/gpu"

// TestCapacityFromNodes creates GPU and CPU nodes on both spokes and checks
// that OCM's agent sums them, GPUs included, into each ManagedCluster's
// capacity and allocatable.
func TestCapacityFromNodes(t *testing.T) {
	joined(t)
	ctx := t.Context()
	type node struct {
		name          string
		cpu, allocCPU string
		memory, gpus  string
	}
	spokes := [][]node{
		{{"a100-1", "64", "63", "256Gi", "4"}, {"a100-2", "64", "63", "256Gi", "4"}, {"cpu-1", "32", "31500m", "128Gi", ""}},
		{{"t4-1", "16", "15", "64Gi", "1"}},
	}
	for i, nodes := range spokes {
		for _, n := range nodes {
			w := utiltesting.MakeNode(n.name).Resource(corev1.ResourceCPU, n.cpu).Resource(corev1.ResourceMemory, n.memory)
			if n.gpus != "" {
				w = w.Resource(gpu, n.gpus)
			}
			obj := w.Obj()
			// Capacity and allocatable differ, so that each is seen to come from its own field.
			obj.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(n.allocCPU)
			if err := framework.CreateNode(ctx, fleet.Spokes[i].AdminClient(), obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []struct {
		capacity, allocatable clusterv1.ResourceList
	}{
		{
			capacity:    clusterv1.ResourceList{"cpu": resource.MustParse("160"), "memory": resource.MustParse("640Gi"), "nvidia.com/gpu": resource.MustParse("8")},
			allocatable: clusterv1.ResourceList{"cpu": resource.MustParse("157500m"), "memory": resource.MustParse("640Gi"), "nvidia.com/gpu": resource.MustParse("8")},
		},
		{
			capacity:    clusterv1.ResourceList{"cpu": resource.MustParse("16"), "memory": resource.MustParse("64Gi"), "nvidia.com/gpu": resource.MustParse("1")},
			allocatable: clusterv1.ResourceList{"cpu": resource.MustParse("15"), "memory": resource.MustParse("64Gi"), "nvidia.com/gpu": resource.MustParse("1")},
		},
	}
	clusters := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).ClusterV1().ManagedClusters()
	framework.Eventually(t, func(ctx context.Context) error {
		for i, w := range want {
			mc, err := clusters.Get(ctx, framework.SpokeName(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			for _, r := range []clusterv1.ResourceName{"cpu", "memory", "nvidia.com/gpu"} {
				gotCap, wantCap := mc.Status.Capacity[r], w.capacity[r]
				if gotCap.Cmp(wantCap) != 0 {
					return fmt.Errorf("%s: capacity %s = %s, want %s", mc.Name, r, gotCap.String(), wantCap.String())
				}
				gotAlloc, wantAlloc := mc.Status.Allocatable[r], w.allocatable[r]
				if gotAlloc.Cmp(wantAlloc) != 0 {
					return fmt.Errorf("%s: allocatable %s = %s, want %s", mc.Name, r, gotAlloc.String(), wantAlloc.String())
				}
			}
		}
		return nil
	})
}

// TestClusterClaims creates ClusterClaims on the first spoke and checks that
// the agent reports them in the ManagedCluster's status: the one ending in
// fleetfit.io (a reserved suffix here) always, the others only up to the
// limit of two custom claims, in name order.
func TestClusterClaims(t *testing.T) {
	joined(t)
	ctx := t.Context()
	claims := clusterclient.NewForConfigOrDie(fleet.Spokes[0].AdminConfig()).ClusterV1alpha1().ClusterClaims()
	for name, value := range map[string]string{
		"c.example.com":            "3",
		"a.example.com":            "1",
		"b.example.com":            "2",
		"gpu-products.fleetfit.io": "A100",
	} {
		claim := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: value}}
		if _, err := claims.Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := []clusterv1.ManagedClusterClaim{
		{Name: "gpu-products.fleetfit.io", Value: "A100"},
		{Name: "a.example.com", Value: "1"},
		{Name: "b.example.com", Value: "2"},
	}
	clusters := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).ClusterV1().ManagedClusters()
	framework.Eventually(t, func(ctx context.Context) error {
		mc, err := clusters.Get(ctx, framework.SpokeName(0), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if diff := cmp.Diff(want, mc.Status.ClusterClaims); diff != "" {
			return fmt.Errorf("cluster claims (-want,+got):\n%s", diff)
		}
		return nil
	})
}
