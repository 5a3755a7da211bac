package testing

import (
	"sort"

	"k8s.io/client-go/tools/cache"
	clusterlisterv1alpha1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Fleet is a set of hub objects from which tests build scheduler snapshots.
type Fleet struct {
	Clusters    []*clusterv1.ManagedCluster
	Sets        []*clusterv1beta2.ManagedClusterSet
	Bindings    []*clusterv1beta2.ManagedClusterSetBinding
	Scores      []*clusterv1alpha1.AddOnPlacementScore
	Inventories []*fleetfitv1alpha1.ClusterInventory
	// Decided maps "namespace/placement" to the clusters of its current decisions.
	Decided map[string][]string
}

// Snapshot indexes the fleet as the hub's cache would.
func (f Fleet) Snapshot() *framework.Snapshot {
	scores := map[string]map[string]*clusterv1alpha1.AddOnPlacementScore{}
	for _, s := range f.Scores {
		if scores[s.Namespace] == nil {
			scores[s.Namespace] = map[string]*clusterv1alpha1.AddOnPlacementScore{}
		}
		scores[s.Namespace][s.Name] = s
	}
	inventories := map[string]*fleetfitv1alpha1.ClusterInventory{}
	for _, inv := range f.Inventories {
		inventories[inv.Namespace] = inv
	}
	in := framework.SnapshotInput{Sets: f.Sets, Bindings: map[string][]string{}, Decided: f.Decided}
	for _, c := range f.Clusters {
		in.Clusters = append(in.Clusters, framework.NewClusterInfo(c, scores[c.Name], inventories[c.Name]))
	}
	for _, b := range f.Bindings {
		in.Bindings[b.Namespace] = append(in.Bindings[b.Namespace], b.Name)
	}
	for _, names := range in.Bindings {
		sort.Strings(names)
	}
	return framework.NewSnapshot(in)
}

// ScoreLister returns a lister over the fleet's AddOnPlacementScores.
func (f Fleet) ScoreLister() clusterlisterv1alpha1.AddOnPlacementScoreLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range f.Scores {
		_ = idx.Add(s)
	}
	return clusterlisterv1alpha1.NewAddOnPlacementScoreLister(idx)
}
