package reporter

import (
	corev1 "k8s.io/api/core/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clustersdkv1alpha1 "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1alpha1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// UsageScoreName is the AddOnPlacementScore that OCM's
// resource-usage-collect-addon (open-cluster-management-io/addon-contrib)
// writes in each cluster's namespace. The agent writes it with the same
// score names and the same normalisation, so Placements that prioritise
// clusters with {type: AddOn, addOn: {resourceName: resource-usage-score,
// scoreName: gpuClusterAvailable}} and the like work unchanged with fleetfit.
const UsageScoreName = "resource-usage-score"

// ResourceTPU is Google's TPU device plugin resource, which the add-on scores
// besides NVIDIA's GPUs.
const ResourceTPU corev1.ResourceName = "google.com/tpu"

// usageScored are the add-on's resources in the order of its score items,
// each with the free amount, in the resource's base unit, from which it
// scores 100. The add-on meant memory in megabytes up to 1 TiB, but it
// divides bytes by 1024 and multiplies them by 1024 again, so it compares
// bytes with 1048576: every node or cluster with more than 1 MiB free scores
// 100. The same bound is kept here, because Placements compare these values
// across clusters that may run either writer.
var usageScored = []struct {
	prefix string
	name   corev1.ResourceName
	max    float64
}{
	{"cpu", corev1.ResourceCPU, 100},
	{"mem", corev1.ResourceMemory, 1024 * 1024},
	{"gpu", ResourceGPU, 20},
	{"tpu", ResourceTPU, 20},
}

// UsageScores are the scores of resource-usage-score for a report, in the
// add-on's order: for cpu, mem, gpu and tpu, <prefix>NodeAvailable, the free
// amount on the node with the most of it free, and <prefix>ClusterAvailable,
// the free amount summed over the cluster's schedulable nodes. Each is
// normalised as the add-on does, with OCM's sdk-go score normaliser over
// [0, max]: nothing free scores −100, max or more 100, and in between
// −100 + 200 × free / max, truncated towards zero.
//
// The amounts are pkg/inventory's, as in the ClusterInventory: pod requests
// counted as kube-scheduler counts them, free never below zero on a node, and
// only nodes that are Ready and not cordoned (the add-on skips cordoned nodes
// only). Any taint is tolerated for the node score, as the add-on ignores
// taints. The best node's amount comes from the report's free summaries,
// which round down (cpu to 100m by default), so a node score may be one point
// below the add-on's.
func UsageScores(st *v1alpha1.ClusterInventoryStatus) []clusterv1alpha1.AddOnPlacementScoreItem {
	view := inventory.NewView(st)
	// Selects every schedulable node, whatever its taints; a toleration of
	// everything without features cannot fail to compile.
	anyTaint, _ := inventory.NewSelector(nil, []corev1.Toleration{{Operator: corev1.TolerationOpExists}})
	items := make([]clusterv1alpha1.AddOnPlacementScoreItem, 0, 2*len(usageScored))
	for _, r := range usageScored {
		var clusterFree int64
		for _, t := range st.Resources {
			if t.Name == r.name {
				clusterFree = inventory.MilliOf(t.Free)
			}
		}
		best, _ := view.FreeOnBestNode(r.name, anyTaint)
		items = append(items,
			clusterv1alpha1.AddOnPlacementScoreItem{Name: r.prefix + "NodeAvailable", Value: usageScore(inventory.MilliOf(best), r.max)},
			clusterv1alpha1.AddOnPlacementScoreItem{Name: r.prefix + "ClusterAvailable", Value: usageScore(clusterFree, r.max)},
		)
	}
	return items
}

// usageScore normalises milli thousandths of a unit against [0, max] as the
// add-on does. The normaliser never fails; it returns an error only to fit
// the add-on's signature.
func usageScore(milli int64, max float64) int32 {
	s, err := clustersdkv1alpha1.NewScoreNormalizer(0, max).Normalize(float64(milli) / 1000)
	if err != nil {
		return clustersdkv1alpha1.MinScore
	}
	return s
}
