package placement

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	toolscache "k8s.io/client-go/tools/cache"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	"github.com/fleetfit/fleetfit/pkg/util/handler"
)

func (c *Controller) placementHandler() toolscache.ResourceEventHandler {
	return handler.Funcs[*clusterv1beta1.Placement]{
		Add: func(p *clusterv1beta1.Placement) {
			if c.started.Load() {
				c.firstSeen.Store(p.Namespace+"/"+p.Name, c.opts.Clock.Now())
				c.trackInterest(p, false)
			}
			c.enqueue(p)
		},
		Update: func(old, p *clusterv1beta1.Placement) {
			if c.started.Load() {
				// Its status says whether it still waits for clusters.
				c.trackInterest(p, false)
			}
			// Our own status writes come back as updates; only spec and metadata matter.
			if old.Generation == p.Generation && equality.Semantic.DeepEqual(old.Labels, p.Labels) &&
				equality.Semantic.DeepEqual(old.Annotations, p.Annotations) && old.DeletionTimestamp.Equal(p.DeletionTimestamp) {
				return
			}
			c.enqueue(p)
		},
		Delete: func(p *clusterv1beta1.Placement) {
			c.trackInterest(p, true)
			c.cache.Forget(p.Namespace + "/" + p.Name)
			c.moves.Delete(p.Namespace + "/" + p.Name)
			c.firstSeen.Delete(p.Namespace + "/" + p.Name)
			c.scoreWrites.Delete(p.Namespace + "/" + p.Name)
			c.statusWrites.forget(p.Namespace + "/" + p.Name)
		},
	}
}

func (c *Controller) decisionHandler() toolscache.ResourceEventHandler {
	owner := func(d *clusterv1beta1.PlacementDecision) {
		name := d.Labels[clusterv1beta1.PlacementLabel]
		if name == "" {
			return
		}
		if p, err := c.placements.Placements(d.Namespace).Get(name); err == nil {
			c.enqueue(p)
		}
	}
	return handler.Funcs[*clusterv1beta1.PlacementDecision]{
		Add: c.cache.UpsertDecision,
		Update: func(old, d *clusterv1beta1.PlacementDecision) {
			c.cache.UpsertDecision(d)
			// Someone else changed a decision we own: schedule again to repair it. The event of
			// our own last write needs nothing.
			if c.decisionWrites.ours(d.Namespace+"/"+d.Name, d.Status.Decisions) {
				return
			}
			if !equality.Semantic.DeepEqual(old.Status, d.Status) || !equality.Semantic.DeepEqual(old.Labels, d.Labels) {
				owner(d)
			}
		},
		Delete: func(d *clusterv1beta1.PlacementDecision) {
			c.cache.DeleteDecision(d.Namespace, d.Name)
			c.decisionWrites.forget(d.Namespace + "/" + d.Name)
			owner(d)
		},
	}
}

// schedulingRelevant reports whether a cluster change can change any scheduling result.
// Heartbeat-only changes (conditions, lease-driven updates) are ignored.
func schedulingRelevant(old, cur *clusterv1.ManagedCluster) bool {
	return !equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
		!equality.Semantic.DeepEqual(old.Annotations, cur.Annotations) ||
		!equality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
		!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(old.Status.ClusterClaims, cur.Status.ClusterClaims) ||
		!equality.Semantic.DeepEqual(old.Status.Allocatable, cur.Status.Allocatable) ||
		!equality.Semantic.DeepEqual(old.Status.Capacity, cur.Status.Capacity) ||
		!equality.Semantic.DeepEqual(old.Status.Version, cur.Status.Version)
}

func (c *Controller) clusterHandler() toolscache.ResourceEventHandler {
	return handler.Funcs[*clusterv1.ManagedCluster]{
		Add: func(cl *clusterv1.ManagedCluster) {
			c.cache.UpsertCluster(cl)
			c.enqueueForClusters(cl.Name, mayMatchCluster(cl), cl)
		},
		Update: func(old, cl *clusterv1.ManagedCluster) {
			c.cache.UpsertCluster(cl)
			if schedulingRelevant(old, cl) {
				c.enqueueForClusters(cl.Name, func(p *clusterv1beta1.Placement) bool {
					return mayMatchCluster(old)(p) || mayMatchCluster(cl)(p)
				}, old, cl)
			}
		},
		Delete: func(cl *clusterv1.ManagedCluster) {
			c.cache.DeleteCluster(cl.Name)
			c.enqueueForClusters(cl.Name, mayMatchCluster(cl), cl)
		},
	}
}

func (c *Controller) setHandler() toolscache.ResourceEventHandler {
	onSet := func(name string) {
		bindings, _ := c.bindings.List(labels.Everything())
		for _, b := range bindings {
			if b.Name == name {
				c.enqueueNamespace(b.Namespace, func(p *clusterv1beta1.Placement) bool {
					return len(p.Spec.ClusterSets) == 0 || sets.New(p.Spec.ClusterSets...).Has(name)
				})
			}
		}
	}
	return handler.Funcs[*clusterv1beta2.ManagedClusterSet]{
		Add: func(s *clusterv1beta2.ManagedClusterSet) {
			c.cache.UpsertSet(s)
			onSet(s.Name)
		},
		Update: func(old, s *clusterv1beta2.ManagedClusterSet) {
			if !equality.Semantic.DeepEqual(old.Spec, s.Spec) {
				c.cache.UpsertSet(s)
				onSet(s.Name)
			}
		},
		Delete: func(s *clusterv1beta2.ManagedClusterSet) {
			c.cache.DeleteSet(s.Name)
			onSet(s.Name)
		},
	}
}

func (c *Controller) bindingHandler() toolscache.ResourceEventHandler {
	all := func(*clusterv1beta1.Placement) bool { return true }
	return handler.Funcs[*clusterv1beta2.ManagedClusterSetBinding]{
		Add: func(b *clusterv1beta2.ManagedClusterSetBinding) {
			c.cache.UpsertBinding(b)
			c.enqueueNamespace(b.Namespace, all)
		},
		Delete: func(b *clusterv1beta2.ManagedClusterSetBinding) {
			c.cache.DeleteBinding(b.Namespace, b.Name)
			c.enqueueNamespace(b.Namespace, all)
		},
	}
}

func (c *Controller) scoreHandler() toolscache.ResourceEventHandler {
	upsert := func(s *clusterv1alpha1.AddOnPlacementScore) {
		before := c.clusterInfo(s.Namespace)
		c.cache.UpsertScore(s)
		c.scoreChanged(s.Namespace, before)
	}
	return handler.Funcs[*clusterv1alpha1.AddOnPlacementScore]{
		Add: upsert,
		Update: func(old, s *clusterv1alpha1.AddOnPlacementScore) {
			if !equality.Semantic.DeepEqual(old.Status, s.Status) {
				upsert(s)
			}
		},
		Delete: func(s *clusterv1alpha1.AddOnPlacementScore) {
			before := c.clusterInfo(s.Namespace)
			c.cache.DeleteScore(s.Namespace, s.Name)
			c.scoreChanged(s.Namespace, before)
		},
	}
}

// scoreChanged requeues what a change of the cluster's AddOnPlacementScore can change: the
// placements whose AddOn prioritizer's value changed (see reported), and those whose CEL
// predicates read scores(), which read the scores themselves.
func (c *Controller) scoreChanged(cluster string, before *framework.ClusterInfo) {
	c.reported(cluster, before, "AddOnPlacementScore")
	if c.started.Load() {
		c.enqueueBound(cluster, readsScoresInCEL)
	}
}

// clusterInfo returns the cluster's current info once the controller has started (nil before:
// the initial lists requeue nothing).
func (c *Controller) clusterInfo(cluster string) *framework.ClusterInfo {
	if !c.started.Load() {
		return nil
	}
	return c.cache.ClusterInfo(cluster)
}

func (c *Controller) inventoryHandler() toolscache.ResourceEventHandler {
	upsert := func(inv *fleetfitv1alpha1.ClusterInventory) {
		before := c.clusterInfo(inv.Namespace)
		if !c.cache.UpsertInventory(inv) {
			c.recorder.Eventf(inv, nil, corev1.EventTypeWarning, "IgnoredInventory", "Schedule",
				"Only the ClusterInventory named %q describes cluster %s; this one is ignored (delete it)", inv.Namespace, inv.Namespace)
			return
		}
		c.opts.Metrics.observeReportLag(inv.Status.ObservedAt.Time, c.opts.Clock.Now())
		c.reported(inv.Namespace, before, "ClusterInventory")
	}
	return handler.Funcs[*fleetfitv1alpha1.ClusterInventory]{
		Add: upsert,
		Update: func(old, inv *fleetfitv1alpha1.ClusterInventory) {
			if !equality.Semantic.DeepEqual(old.Status, inv.Status) {
				upsert(inv)
			}
		},
		Delete: func(inv *fleetfitv1alpha1.ClusterInventory) {
			if cache.InventoryName(inv) {
				before := c.clusterInfo(inv.Namespace)
				c.cache.DeleteInventory(inv)
				c.reported(inv.Namespace, before, "ClusterInventory")
			}
		},
	}
}

// reported requeues the placements whose result a change of what the cluster reports (its
// info was before, source names the kind of object) can change: a heartbeat, or a change no
// plugin reads, requeues none.
func (c *Controller) reported(cluster string, before *framework.ClusterInfo, source string) {
	if !c.started.Load() {
		return
	}
	c.clusterChanged(framework.NewClusterEvent(before, c.clusterInfo(cluster), c.opts.Clock.Now()), source)
}

func (c *Controller) intentHandler() toolscache.ResourceEventHandler {
	onIntent := func(in *fleetfitv1alpha1.HPAIntent) {
		// The placement it names, and the one it last shaped when that differs.
		for _, name := range hpa.PlacementsOf(in) {
			if p, err := c.placements.Placements(in.Namespace).Get(name); err == nil {
				if c.started.Load() {
					// Whether it reads reports depends on its intents.
					c.trackInterest(p, false)
				}
				c.enqueue(p)
			}
		}
	}
	return handler.Funcs[*fleetfitv1alpha1.HPAIntent]{
		Add: onIntent,
		Update: func(old, in *fleetfitv1alpha1.HPAIntent) {
			// A new spec, or a new verdict of the validation controller (a status change).
			oldValid, oldKnown := hpa.IsValid(old)
			valid, known := hpa.IsValid(in)
			// A move away from a cluster starts a back-off there that HardwareFit reads.
			if old.Generation != in.Generation || oldValid != valid || oldKnown != known || backoffsChanged(old, in) {
				onIntent(in)
			}
			// The placement it left must be rescheduled without it.
			if old.Spec.PlacementRef.Name != in.Spec.PlacementRef.Name {
				onIntent(old)
			}
			// A split that placed all its replicas, or no longer does, changes whether its
			// placement waits for room (our own status write: no cycle needed).
			if c.started.Load() && !equality.Semantic.DeepEqual(old.Status.Split, in.Status.Split) {
				for _, name := range hpa.PlacementsOf(in) {
					if p, err := c.placements.Placements(in.Namespace).Get(name); err == nil {
						c.trackInterest(p, false)
					}
				}
			}
		},
		Delete: func(in *fleetfitv1alpha1.HPAIntent) {
			c.scheduledWrites.Delete(in.UID)
			c.cache.DeleteIntent(in)
			onIntent(in)
		},
	}
}

// backoffsChanged reports whether the intent moved away from a cluster, or a back-off changed:
// what HardwareFit reads of an intent's moves (not when a move completes).
func backoffsChanged(old, cur *fleetfitv1alpha1.HPAIntent) bool {
	if len(old.Status.Moves) != len(cur.Status.Moves) {
		return true
	}
	for i := range cur.Status.Moves {
		o, c := &old.Status.Moves[i], &cur.Status.Moves[i]
		if o.From != c.From || !o.BackoffUntil.Equal(&c.BackoffUntil) {
			return true
		}
	}
	return false
}
