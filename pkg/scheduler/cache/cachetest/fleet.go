// Package cachetest builds scheduler snapshots for tests from hub objects, with the hub's own
// cache, so that a test's fleet is indexed exactly as the hub indexes it.
package cachetest

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clusterlisterv1alpha1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1alpha1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
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

// Snapshot indexes the fleet with the hub's own cache.
func (f Fleet) Snapshot() *framework.Snapshot {
	o := cache.Objects{Clusters: f.Clusters, Sets: f.Sets, Bindings: f.Bindings, Scores: f.Scores, Inventories: f.Inventories}
	for key, names := range f.Decided {
		ns, placement, _ := strings.Cut(key, "/")
		d := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: placement + "-decision-1", Labels: map[string]string{clusterv1beta1.PlacementLabel: placement},
		}}
		for _, n := range names {
			d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: n})
		}
		o.Decisions = append(o.Decisions, d)
	}
	c := cache.New()
	c.Load(o)
	return c.Snapshot()
}

// ScoreLister returns a lister over the fleet's AddOnPlacementScores.
func (f Fleet) ScoreLister() clusterlisterv1alpha1.AddOnPlacementScoreLister {
	idx := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, s := range f.Scores {
		_ = idx.Add(s)
	}
	return clusterlisterv1alpha1.NewAddOnPlacementScoreLister(idx)
}
