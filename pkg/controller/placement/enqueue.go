package placement

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
	clustersdkv1beta2 "open-cluster-management.io/sdk-go/pkg/apis/cluster/v1beta2"
)

// enqueueForClusters requeues the placements that a change to one cluster can affect: those in
// namespaces bound to a cluster set the cluster belongs to (before or after the change), whose
// spec.clusterSets allow that set, and for which affects says the change matters — plus every
// placement that currently decides the cluster, which may have to drop it.
func (c *Controller) enqueueForClusters(cluster string, affects func(*clusterv1beta1.Placement) bool, objs ...*clusterv1.ManagedCluster) {
	if !c.started.Load() {
		return
	}
	deciding := c.cache.DecidedBy(cluster)
	_, namespaces := c.enqueueBound(cluster, func(p *clusterv1beta1.Placement) bool {
		return deciding.Has(p.Namespace+"/"+p.Name) || affects(p)
	}, objs...)
	for key := range deciding {
		ns, name, _ := strings.Cut(key, "/")
		if namespaces.Has(ns) {
			continue
		}
		if p, err := c.placements.Placements(ns).Get(name); err == nil {
			c.enqueue(p)
		}
	}
}

// enqueueBound requeues the placements that match in the namespaces bound to a set the
// cluster belongs to (before or after the change, given objs; as the cache has it without),
// when their spec.clusterSets allow one of those sets. It returns the sets and the namespaces.
func (c *Controller) enqueueBound(cluster string, match func(*clusterv1beta1.Placement) bool,
	objs ...*clusterv1.ManagedCluster) (memberOf, namespaces sets.Set[string]) {
	if len(objs) == 0 {
		memberOf = c.setsOf(cluster)
	} else {
		memberOf = sets.New[string]()
		allSets, _ := c.sets.List(labels.Everything())
		for _, s := range allSets {
			for _, cl := range objs {
				if inSet(s, cl) {
					memberOf.Insert(s.Name)
				}
			}
		}
	}
	namespaces = c.boundNamespaces(memberOf)
	for ns := range namespaces {
		c.enqueueNamespace(ns, func(p *clusterv1beta1.Placement) bool {
			if len(p.Spec.ClusterSets) > 0 && !memberOf.HasAny(p.Spec.ClusterSets...) {
				return false
			}
			return match(p)
		})
	}
	return memberOf, namespaces
}

// enqueueNamespace requeues the placements of a namespace that match.
func (c *Controller) enqueueNamespace(ns string, match func(*clusterv1beta1.Placement) bool) {
	if !c.started.Load() {
		return
	}
	ps, _ := c.placements.Placements(ns).List(labels.Everything())
	for _, p := range ps {
		if match(p) {
			c.enqueue(p)
		}
	}
}

// inSet reports whether the cluster is a member of the set, with OCM's own semantics.
func inSet(s *clusterv1beta2.ManagedClusterSet, cl *clusterv1.ManagedCluster) bool {
	sel, err := clustersdkv1beta2.BuildClusterSelector(s)
	return err == nil && sel != nil && sel.Matches(labels.Set(cl.Labels))
}

// mayMatchCluster returns whether a placement's predicates can select the cluster. Only
// label-only predicates are checked; claims and CEL count as a possible match.
func mayMatchCluster(cl *clusterv1.ManagedCluster) func(*clusterv1beta1.Placement) bool {
	return func(p *clusterv1beta1.Placement) bool {
		if len(p.Spec.Predicates) == 0 {
			return true
		}
		for _, pr := range p.Spec.Predicates {
			sel := pr.RequiredClusterSelector
			if len(sel.ClaimSelector.MatchExpressions) > 0 || len(sel.CelSelector.CelExpressions) > 0 {
				return true
			}
			ls, err := metav1.LabelSelectorAsSelector(&sel.LabelSelector)
			if err != nil || ls.Matches(labels.Set(cl.Labels)) {
				return true
			}
		}
		return false
	}
}

// readsScoresInCEL reports whether a placement's CEL predicates may read AddOnPlacementScores
// through scores(), which reads them from the hub's lister rather than from the cycle's
// snapshot: any change of a score of a cluster may change what they select. (AddOn
// prioritizers read the snapshot and say themselves which changes matter.)
func readsScoresInCEL(p *clusterv1beta1.Placement) bool {
	for _, pr := range p.Spec.Predicates {
		for _, e := range pr.RequiredClusterSelector.CelSelector.CelExpressions {
			if strings.Contains(e, "scores(") {
				return true
			}
		}
	}
	return false
}
