// Package parity runs the same fleet and the same Placements through OCM's own placement
// controller (built from open-cluster-management.io/ocm by `make tools`) on one hub and
// through fleetfit-hub on another, and requires the same PlacementDecisions (names, labels,
// clusters in order) and the same Placement status (selected count, decision groups, and
// conditions with OCM's reasons and messages).
//
// The Placements avoid what fleetfit does differently on purpose: a PreferNoSelect taint
// (fleetfit penalises it), a misconfiguration's decisions (fleetfit keeps them, OCM writes an
// empty one) and Balance between placements scheduled concurrently (the result depends on
// which placement is scheduled first, in both).
package parity

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/install"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

const ns = "parity"

// fixture is the fleet both hubs get.
func clusters() []*utiltesting.ClusterWrapper {
	var out []*utiltesting.ClusterWrapper
	for i := range 12 {
		w := utiltesting.MakeCluster(fmt.Sprintf("c%02d", i)).
			Label("env", []string{"prod", "dev", "test"}[i%3]).
			Label("region", []string{"east", "west"}[i%2]).
			Resource(clusterv1.ResourceCPU, fmt.Sprint(4+i*2), fmt.Sprint(4+i*2)).
			Resource(clusterv1.ResourceMemory, fmt.Sprintf("%dGi", 64-i*4), fmt.Sprintf("%dGi", 64-i*4))
		if i%4 == 0 {
			w.Claim("platform.open-cluster-management.io", []string{"AWS", "GCP", "Azure"}[i%3])
		}
		if i == 5 {
			w.Taint("maintenance", "true", clusterv1.TaintEffectNoSelect, time.Now())
		}
		out = append(out, w)
	}
	for i := range 150 {
		out = append(out, utiltesting.MakeCluster(fmt.Sprintf("big-%03d", i)).ClusterSet("big"))
	}
	return out
}

func placements() []*clusterv1beta1.Placement {
	exact := func(w *utiltesting.PlacementWrapper) *utiltesting.PlacementWrapper {
		return w.Mode(clusterv1beta1.PrioritizerPolicyModeExact)
	}
	return []*clusterv1beta1.Placement{
		utiltesting.MakePlacement("all", ns).ClusterSets("default").Obj(),
		utiltesting.MakePlacement("prod", ns).ClusterSets("default").PredicateLabels(map[string]string{"env": "prod"}).Obj(),
		utiltesting.MakePlacement("prod-or-west", ns).ClusterSets("default").
			PredicateLabels(map[string]string{"env": "prod"}).PredicateLabels(map[string]string{"region": "west"}).Obj(),
		utiltesting.MakePlacement("aws", ns).ClusterSets("default").PredicateClaims(metav1.LabelSelectorRequirement{
			Key: "platform.open-cluster-management.io", Operator: metav1.LabelSelectorOpIn, Values: []string{"AWS"}}).Obj(),
		utiltesting.MakePlacement("cel", ns).ClusterSets("default").PredicateCEL(`managedCluster.metadata.labels["region"] == "east"`).Obj(),
		exact(utiltesting.MakePlacement("first-two", ns).ClusterSets("default").NumberOfClusters(2)).Obj(),
		exact(utiltesting.MakePlacement("tolerates", ns).ClusterSets("default").PredicateLabels(map[string]string{"env": "test"})).
			Toleration(clusterv1beta1.Toleration{Key: "maintenance", Operator: clusterv1beta1.TolerationOpExists}).Obj(),
		exact(utiltesting.MakePlacement("most-cpu", ns).ClusterSets("default").NumberOfClusters(3)).BuiltIn("ResourceAllocatableCPU", 1).Obj(),
		exact(utiltesting.MakePlacement("most-memory", ns).ClusterSets("default").NumberOfClusters(3)).BuiltIn("ResourceAllocatableMemory", 2).Obj(),
		exact(utiltesting.MakePlacement("least-cpu", ns).ClusterSets("default").NumberOfClusters(2)).BuiltIn("ResourceAllocatableCPU", -1).Obj(),
		exact(utiltesting.MakePlacement("addon", ns).ClusterSets("default").NumberOfClusters(2)).AddOn("usage", "cpu", 1).Obj(),
		utiltesting.MakePlacement("groups", ns).ClusterSets("default").ClustersPerDecisionGroup(intstr.FromString("25%")).
			DecisionGroup("canary", map[string]string{"region": "west"}).Obj(),
		utiltesting.MakePlacement("groups-of-5", ns).ClusterSets("big").ClustersPerDecisionGroup(intstr.FromInt32(40)).Obj(),
		utiltesting.MakePlacement("big", ns).ClusterSets("big").Obj(),
		utiltesting.MakePlacement("unbound", ns).ClusterSets("nowhere").Obj(),
		utiltesting.MakePlacement("nothing-matches", ns).ClusterSets("default").PredicateLabels(map[string]string{"env": "none"}).Obj(),
		utiltesting.MakePlacement("too-many", ns).ClusterSets("default").NumberOfClusters(20).Obj(),
	}
}

// populate creates the fixture on a hub.
func populate(ctx context.Context, t *testing.T, hub *framework.ControlPlane) {
	cfg := hub.AdminConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	c := clusterclient.NewForConfigOrDie(cfg)
	kube := hub.AdminClient()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, set := range []string{"default", "big"} {
		_, err := c.ClusterV1beta2().ManagedClusterSets().Create(ctx, utiltesting.MakeExclusiveClusterSet(set), metav1.CreateOptions{})
		must(err)
	}
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	must(err)
	for _, set := range []string{"default", "big"} {
		_, err := c.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, utiltesting.MakeClusterSetBinding(ns, set), metav1.CreateOptions{})
		must(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	sem := make(chan struct{}, 16)
	for _, w := range clusters() {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			want := w.Obj()
			got, err := c.ClusterV1().ManagedClusters().Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
			if err == nil && (len(want.Status.Allocatable) > 0 || len(want.Status.ClusterClaims) > 0) {
				got.Status = want.Status
				_, err = c.ClusterV1().ManagedClusters().UpdateStatus(ctx, got, metav1.UpdateOptions{})
			}
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	// Add-on scores for the AddOn prioritizer, in the clusters' namespaces.
	for i := range 12 {
		name := fmt.Sprintf("c%02d", i)
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		must(err)
		s, err := c.ClusterV1alpha1().AddOnPlacementScores(name).Create(ctx, utiltesting.MakeScore(name, "usage", nil, nil), metav1.CreateOptions{})
		must(err)
		s.Status = utiltesting.MakeScore(name, "usage", nil, map[string]int32{"cpu": int32((i * 37) % 100)}).Status
		_, err = c.ClusterV1alpha1().AddOnPlacementScores(name).UpdateStatus(ctx, s, metav1.UpdateOptions{})
		must(err)
	}
	for _, p := range placements() {
		_, err := c.ClusterV1beta1().Placements(ns).Create(ctx, p, metav1.CreateOptions{})
		must(err)
	}
}

// outcome is what a placement controller wrote for one placement, without what fleetfit
// adds (ClusterDecision.score) and without timestamps.
type outcome struct {
	Decisions  map[string][]string
	Labels     map[string]map[string]string
	Selected   int32
	Groups     []clusterv1beta1.DecisionGroupStatus
	Conditions map[string]string
}

func outcomes(ctx context.Context, c clusterclient.Interface) (map[string]outcome, error) {
	ps, err := c.ClusterV1beta1().Placements(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	ds, err := c.ClusterV1beta1().PlacementDecisions(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]outcome{}
	for _, p := range ps.Items {
		o := outcome{Decisions: map[string][]string{}, Labels: map[string]map[string]string{}, Conditions: map[string]string{},
			Selected: p.Status.NumberOfSelectedClusters, Groups: p.Status.DecisionGroups}
		for _, cond := range p.Status.Conditions {
			o.Conditions[cond.Type] = fmt.Sprintf("%s/%s: %s", cond.Status, cond.Reason, cond.Message)
		}
		out[p.Name] = o
	}
	for _, d := range ds.Items {
		o, ok := out[d.Labels[clusterv1beta1.PlacementLabel]]
		if !ok {
			continue
		}
		names := []string{}
		for _, cd := range d.Status.Decisions {
			names = append(names, cd.ClusterName)
		}
		o.Decisions[d.Name] = names
		o.Labels[d.Name] = d.Labels
	}
	return out, nil
}

// settled waits until every placement has both conditions and the outcomes stop changing.
func settled(t *testing.T, c clusterclient.Interface) map[string]outcome {
	var last map[string]outcome
	stable := 0
	framework.Eventually(t, func(ctx context.Context) error {
		got, err := outcomes(ctx, c)
		if err != nil {
			return err
		}
		for name, o := range got {
			if len(o.Conditions) < 2 {
				return fmt.Errorf("placement %s has conditions %v", name, o.Conditions)
			}
		}
		if !cmp.Equal(got, last) {
			last, stable = got, 0
			return fmt.Errorf("outcomes still changing")
		}
		if stable++; stable < 10 {
			return fmt.Errorf("waiting for outcomes to stay the same")
		}
		return nil
	})
	return last
}

func startHub(ctx context.Context, name string) (*framework.ControlPlane, error) {
	hub, err := framework.StartControlPlane(ctx, name, framework.Options{})
	if err != nil {
		return nil, err
	}
	crds, err := manifests.HubCRDs()
	if err == nil {
		err = install.ApplyCRDs(ctx, hub.AdminConfig(), crds)
	}
	if err != nil {
		hub.Stop()
		return nil, err
	}
	return hub, nil
}

func TestSameDecisionsAsOCM(t *testing.T) {
	ctx := t.Context()
	hubs := make([]*framework.ControlPlane, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, name := range []string{"hub-ocm", "hub-fleetfit"} {
		wg.Go(func() { hubs[i], errs[i] = startHub(ctx, name) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(hubs[i].Stop)
	}
	ocmHub, ffHub := hubs[0], hubs[1]
	populate(ctx, t, ocmHub)
	populate(ctx, t, ffHub)

	ocm, err := framework.StartOCMPlacement(ctx, ocmHub)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ocm.Stop()
		if t.Failed() {
			t.Logf("OCM placement controller log:\n%s", ocm.LogTail(40))
		}
	})
	framework.RunHub(t, ffHub.AdminConfig())

	want := settled(t, clusterclient.NewForConfigOrDie(ocmHub.AdminConfig()))
	got := settled(t, clusterclient.NewForConfigOrDie(ffHub.AdminConfig()))
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) != len(placements()) {
		t.Fatalf("OCM reports %d placements, want %d", len(names), len(placements()))
	}
	for _, name := range names {
		if diff := cmp.Diff(want[name], got[name]); diff != "" {
			t.Errorf("placement %s: fleetfit differs from OCM (-OCM,+fleetfit):\n%s", name, diff)
		}
	}
	// The fixture must exercise something: more than 100 clusters in two objects, groups, and
	// each condition reason.
	if len(want["big"].Decisions) != 2 || len(want["groups-of-5"].Groups) != 4 {
		t.Errorf("fixture too weak: big has %d decision objects, groups-of-5 %d groups", len(want["big"].Decisions), len(want["groups-of-5"].Groups))
	}
	reasons := map[string]bool{}
	for _, o := range want {
		reasons[o.Conditions[clusterv1beta1.PlacementConditionSatisfied]] = true
	}
	if len(reasons) < 4 {
		t.Errorf("fixture covers only %d distinct Satisfied conditions: %v", len(reasons), slices.Sorted(func(yield func(string) bool) {
			for r := range reasons {
				if !yield(r) {
					return
				}
			}
		}))
	}
}
