package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestNoSelectTaint: a NoSelect taint keeps every placement that does not tolerate it off
// the cluster; a matching toleration (Equal on key and value, or Exists on the key, with the
// effect or without) admits it, and one for another value does not.
func TestNoSelectTaint(t *testing.T) {
	e := newEnv(t, "taints-noselect")
	now := time.Now()
	e.createCluster(e.cluster("a").Taint("dedicated", "gpu", clusterv1.TaintEffectNoSelect, now))
	e.createCluster(e.cluster("b"))
	e.startHub()

	tests := map[string]struct {
		toleration *clusterv1beta1.Toleration
		want       []string
	}{
		"no toleration": {want: e.names("b")},
		"equal": {
			toleration: ptrTo(utiltesting.MakeToleration("dedicated", clusterv1beta1.TolerationOpEqual, "gpu", clusterv1.TaintEffectNoSelect)),
			want:       e.names("a", "b"),
		},
		"exists without effect": {
			toleration: ptrTo(utiltesting.MakeToleration("dedicated", clusterv1beta1.TolerationOpExists, "", "")),
			want:       e.names("a", "b"),
		},
		"other value": {
			toleration: ptrTo(utiltesting.MakeToleration("dedicated", clusterv1beta1.TolerationOpEqual, "fpga", clusterv1.TaintEffectNoSelect)),
			want:       e.names("b"),
		},
		"other effect": {
			toleration: ptrTo(utiltesting.MakeToleration("dedicated", clusterv1beta1.TolerationOpExists, "", clusterv1.TaintEffectPreferNoSelect)),
			want:       e.names("b"),
		},
	}
	i := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := e.in(t)
			i++
			p := utiltesting.MakePlacement(fmt.Sprintf("p%d", i), e.ns)
			if tc.toleration != nil {
				p.Toleration(*tc.toleration)
			}
			e.createPlacement(p)
			e.waitDecided(p.Name, tc.want...)
		})
	}
}

// TestNoSelectIfNewTaint: a NoSelectIfNew taint keeps new placements off the cluster, but a
// placement that already decides it keeps it; a toleration admits it for new placements.
func TestNoSelectIfNewTaint(t *testing.T) {
	e := newEnv(t, "taints-noselectifnew")
	e.createCluster(e.cluster("a"))
	e.createCluster(e.cluster("b"))
	e.createCluster(e.cluster("c"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("old", e.ns))
	e.waitDecided("old", e.names("a", "b", "c")...)

	now := time.Now()
	e.updateCluster(e.set+"-a", func(cl *clusterv1.ManagedCluster) {
		cl.Spec.Taints = append(cl.Spec.Taints, clusterv1.Taint{Key: "draining", Effect: clusterv1.TaintEffectNoSelectIfNew, TimeAdded: metav1.NewTime(now)})
	})
	// Also a NoSelect taint on b: once "old" drops b, the hub has also seen a's taint (one
	// watch delivers both updates in order), so the placements created next see it.
	e.updateCluster(e.set+"-b", func(cl *clusterv1.ManagedCluster) {
		cl.Spec.Taints = append(cl.Spec.Taints, clusterv1.Taint{Key: "broken", Effect: clusterv1.TaintEffectNoSelect, TimeAdded: metav1.NewTime(now)})
	})
	e.waitDecided("old", e.names("a", "c")...)

	e.createPlacement(utiltesting.MakePlacement("new", e.ns))
	e.waitDecided("new", e.names("c")...)
	e.createPlacement(utiltesting.MakePlacement("tolerating", e.ns).
		Toleration(utiltesting.MakeToleration("draining", clusterv1beta1.TolerationOpExists, "", clusterv1.TaintEffectNoSelectIfNew)))
	e.waitDecided("tolerating", e.names("a", "c")...)

	// "old" is still scheduled with the taint in place: it keeps a.
	e.resync("old")
	e.waitDecided("old", e.names("a", "c")...)
}

// TestPreferNoSelectTaint: OCM still selects a cluster with a PreferNoSelect taint; fleetfit
// also gives it the lowest score unless the placement tolerates the taint, so when only one of
// two otherwise equal clusters is wanted, the untainted one wins even though the tainted one
// sorts first by name.
func TestPreferNoSelectTaint(t *testing.T) {
	e := newEnv(t, "taints-prefernoselect")
	e.createCluster(e.cluster("a").Taint("spot", "", clusterv1.TaintEffectPreferNoSelect, time.Now()))
	e.createCluster(e.cluster("b"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("all", e.ns))
	e.waitDecided("all", e.names("a", "b")...)

	e.createPlacement(utiltesting.MakePlacement("one", e.ns).NumberOfClusters(1))
	e.waitDecided("one", e.names("b")...)
	e.waitCondition("one", clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")

	// Tolerated, the taint costs nothing: the Exact mode without prioritizers leaves the
	// clusters tied, and the tie goes to the first name.
	e.createPlacement(utiltesting.MakePlacement("tolerating", e.ns).NumberOfClusters(1).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).
		Toleration(utiltesting.MakeToleration("spot", clusterv1beta1.TolerationOpExists, "", clusterv1.TaintEffectPreferNoSelect)))
	e.waitDecided("tolerating", e.names("a")...)
}

// TestTolerationSeconds: a toleration with tolerationSeconds admits a tainted cluster until
// the taint's timeAdded plus those seconds; the placement is scheduled again at that time by
// itself (nothing else changes) and drops the cluster.
func TestTolerationSeconds(t *testing.T) {
	e := newEnv(t, "taints-seconds")
	const seconds = 6
	added := time.Now().Truncate(time.Second) // timeAdded is stored to the second
	e.createCluster(e.cluster("a").Taint("maintenance", "", clusterv1.TaintEffectNoSelect, added))
	e.createCluster(e.cluster("b"))
	e.startHub()

	e.createPlacement(utiltesting.MakePlacement("p", e.ns).
		Toleration(utiltesting.MakeToleration("maintenance", clusterv1beta1.TolerationOpExists, "", clusterv1.TaintEffectNoSelect, seconds)))
	expiry := added.Add(seconds * time.Second)
	e.waitDecided("p", e.names("a", "b")...)
	if time.Now().After(expiry) {
		t.Fatalf("the cluster was only decided after its toleration expired at %s; the machine is too slow for this test", expiry)
	}

	framework.Eventually(t, func(ctx context.Context) error {
		got, _, err := e.decided(ctx, "p")
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0] != e.set+"-b" {
			return fmt.Errorf("decided %v, want only %s-b once the toleration expired at %s", got, e.set, expiry.Format(time.RFC3339))
		}
		return nil
	})
	if now := time.Now(); now.Before(expiry) {
		t.Errorf("the cluster was dropped at %s, before its toleration expired at %s", now.Format(time.RFC3339Nano), expiry.Format(time.RFC3339))
	}
}
