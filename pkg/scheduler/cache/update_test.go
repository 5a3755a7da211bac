package cache_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestUpdatedSnapshotsEqualRebuiltOnes changes a cache at random (clusters come, go, change
// labels or only their status, taints and deletion; scores and decisions come and go) and checks after each change
// that its snapshot, updated in place of being rebuilt when it can, equals the snapshot of a
// new cache loaded with the same objects.
func TestUpdatedSnapshotsEqualRebuiltOnes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	c := cache.New()
	sets := []*clusterv1beta2.ManagedClusterSet{utiltesting.MakeExclusiveClusterSet("even"), utiltesting.MakeExclusiveClusterSet("odd")}
	for _, s := range sets {
		c.UpsertSet(s)
	}
	clusters := map[string]*clusterv1.ManagedCluster{}
	scores := map[string]*clusterv1alpha1.AddOnPlacementScore{}
	decisions := map[string]*clusterv1beta1.PlacementDecision{}
	placements := map[string]bool{}
	cluster := func() string { return fmt.Sprintf("c%02d", rng.IntN(30)) }
	updates := 0
	for step := range 3000 {
		var op string
		switch rng.IntN(7) {
		case 0: // a cluster comes or changes its labels
			name := cluster()
			cl := utiltesting.MakeCluster(name).ClusterSet([]string{"even", "odd"}[rng.IntN(2)]).Label("region", fmt.Sprint(rng.IntN(3))).Obj()
			clusters[name] = cl
			c.UpsertCluster(cl)
			op = "upsert cluster " + name
		case 1: // a cluster's status changes, its labels do not
			name := cluster()
			old, ok := clusters[name]
			if !ok {
				continue
			}
			cl := old.DeepCopy()
			cl.Status.ClusterClaims = []clusterv1.ManagedClusterClaim{{Name: "step", Value: fmt.Sprint(step)}}
			cl.Spec.Taints = nil
			if rng.IntN(2) == 0 {
				cl.Spec.Taints = []clusterv1.Taint{{Key: "k", Effect: clusterv1.TaintEffectNoSelect}}
			}
			cl.DeletionTimestamp = nil
			if rng.IntN(4) == 0 {
				now := metav1.Now()
				cl.DeletionTimestamp = &now
			}
			clusters[name] = cl
			c.UpsertCluster(cl)
			op = "update status of " + name
		case 2:
			name := cluster()
			delete(clusters, name)
			c.DeleteCluster(name)
			op = "delete cluster " + name
		case 3:
			name := cluster()
			s := utiltesting.MakeScore(name, "s", nil, map[string]int32{"x": int32(step % 100)})
			scores[name] = s
			c.UpsertScore(s)
			op = "upsert score " + name
		case 4, 5:
			p := fmt.Sprintf("p%d", rng.IntN(8))
			name := fmt.Sprintf("%s-decision-%d", p, 1+rng.IntN(2))
			var names []string
			for range rng.IntN(4) {
				names = append(names, cluster())
			}
			d := decision("ns", name, p, names...)
			decisions[name] = d
			placements["ns/"+p] = true
			c.UpsertDecision(d)
			op = "upsert decision " + name
		case 6:
			name := fmt.Sprintf("p%d-decision-%d", rng.IntN(8), 1+rng.IntN(2))
			delete(decisions, name)
			c.DeleteDecision("ns", name)
			op = "delete decision " + name
		}
		before := c.Snapshot()
		got := c.Snapshot()
		if got != before {
			t.Fatalf("step %d: a second snapshot without change is a new one", step)
		}
		fresh := cache.New()
		fresh.Load(cache.Objects{
			Clusters: slices.Collect(maps.Values(clusters)), Sets: sets,
			Scores: slices.Collect(maps.Values(scores)), Decisions: slices.Collect(maps.Values(decisions)),
		})
		if diff := cmp.Diff(describe(fresh.Snapshot(), placements), describe(got, placements)); diff != "" {
			t.Fatalf("step %d (%s): snapshot differs from a rebuilt one (-rebuilt +got):\n%s", step, op, diff)
		}
		if op != "" {
			updates++
		}
	}
	if updates < 2000 {
		t.Fatalf("only %d changes made", updates)
	}
}

type snapshotView struct {
	Clusters    []string
	Terminating []int
	Tainted     []int
	Claims      []map[string]string
	Scores      []int32
	Counts      []int32
	Sets        map[string][]int
	Decided     map[string][]string
}

func describe(s *framework.Snapshot, placements map[string]bool) snapshotView {
	v := snapshotView{Sets: map[string][]int{}, Decided: map[string][]string{},
		Terminating: s.Terminating().Indexes(), Tainted: s.Tainted().Indexes()}
	for i := range s.NumClusters() {
		info := s.Cluster(i)
		v.Clusters = append(v.Clusters, info.Name()+" "+info.Cluster.Labels["region"])
		v.Claims = append(v.Claims, info.Claims)
		score := int32(-1)
		if sc, ok := info.Scores["s"]; ok {
			score = sc.Status.Scores[0].Value
		}
		v.Scores = append(v.Scores, score)
		v.Counts = append(v.Counts, s.DecisionCount(i))
	}
	for _, set := range []string{"even", "odd"} {
		b, _ := s.ClusterSet(set)
		v.Sets[set] = b.Indexes()
	}
	for key := range placements {
		if names := s.DecidedNames(key); names != nil {
			v.Decided[key] = names
		}
	}
	return v
}
