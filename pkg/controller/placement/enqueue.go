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
	memberOf := sets.New[string]()
	allSets, _ := c.sets.List(labels.Everything())
	for _, s := range allSets {
		for _, cl := range objs {
			if inSet(s, cl) {
				memberOf.Insert(s.Name)
			}
		}
	}
	if len(objs) == 0 {
		// A score or inventory changed: the cluster object tells which sets it is in.
		if cl, ok := c.cache.Cluster(cluster); ok {
			for _, s := range allSets {
				if inSet(s, cl) {
					memberOf.Insert(s.Name)
				}
			}
		}
	}
	bindings, _ := c.bindings.List(labels.Everything())
	namespaces := sets.New[string]()
	for _, b := range bindings {
		if memberOf.Has(b.Name) {
			namespaces.Insert(b.Namespace)
		}
	}
	for ns := range namespaces {
		c.enqueueNamespace(ns, func(p *clusterv1beta1.Placement) bool {
			if deciding.Has(p.Namespace + "/" + p.Name) {
				return true
			}
			if len(p.Spec.ClusterSets) > 0 && !memberOf.HasAny(p.Spec.ClusterSets...) {
				return false
			}
			return affects(p)
		})
	}
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

// usesScore returns whether a placement reads the named AddOnPlacementScore: through an AddOn
// prioritizer, or possibly through CEL's scores().
func usesScore(name string) func(*clusterv1beta1.Placement) bool {
	return func(p *clusterv1beta1.Placement) bool {
		for _, cfg := range p.Spec.PrioritizerPolicy.Configurations {
			if sc := cfg.ScoreCoordinate; sc != nil && sc.AddOn != nil && sc.AddOn.ResourceName == name && cfg.Weight != 0 {
				return true
			}
		}
		for _, pr := range p.Spec.Predicates {
			for _, e := range pr.RequiredClusterSelector.CelSelector.CelExpressions {
				if strings.Contains(e, "scores(") {
					return true
				}
			}
		}
		return false
	}
}

// usesInventory returns whether a placement's result depends on ClusterInventories: it has
// HPAIntents, or a resource prioritizer reads real free resources.
func (c *Controller) usesInventory(p *clusterv1beta1.Placement) bool {
	for _, cfg := range p.Spec.PrioritizerPolicy.Configurations {
		if sc := cfg.ScoreCoordinate; sc != nil && cfg.Weight != 0 &&
			(strings.HasPrefix(sc.BuiltIn, "ResourceAllocatable") || strings.HasPrefix(sc.BuiltIn, "ResourceRatio")) {
			return true
		}
	}
	return len(c.intentsFor(p)) > 0
}
