package scheduler

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// steadyFleet is a hub whose clusters report as fleetfit agents do, with placements that
// deliver workloads: three satisfied ones, and two that wait for room no cluster has.
type steadyFleet struct {
	*env
	ff    fleetfitclient.Interface
	works workclient.Interface
	hub   framework.InProcessHub
	// nodes and pods are what each cluster's report describes, by cluster suffix.
	nodes map[string][]*corev1.Node
	pods  map[string][]*corev1.Pod
}

const cyclesMetric = "fleetfit_scheduler_cycles_total"

// TestHoldStill: on a steady fleet a heartbeat schedules nothing, a burst of reports that
// change nothing a decision depends on leaves every decision and ManifestWork as it was, and
// room freed on one cluster schedules the placement that waits for it and no other.
func TestHoldStill(t *testing.T) {
	f := &steadyFleet{env: newEnv(t, "hold-still"), nodes: map[string][]*corev1.Node{}, pods: map[string][]*corev1.Pod{}}
	f.ff = fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
	f.works = workclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
	clusters := []string{"a", "b", "c", "d"}
	for _, s := range clusters {
		f.createCluster(f.cluster(s))
		for i := range 2 {
			f.nodes[s] = append(f.nodes[s], utiltesting.MakeNode(fmt.Sprintf("%s-n%d", s, i)).
				Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").Resource(corev1.ResourcePods, "110").Obj())
		}
		f.report(s)
	}
	f.hub, _ = framework.RunHubServing(t, fleet.Hub.AdminConfig(), "--workers=2")

	satisfied := []string{"web-1", "web-2", "web-3"}
	for _, name := range satisfied {
		f.createIntent(name, "cpu", "1")
		f.createPlacement(utiltesting.MakePlacement(name, f.ns).NumberOfClusters(2))
	}
	// Waiting: four GPUs on one node, and 64 cores on one node; no cluster has either.
	f.createIntent("gpu", "nvidia.com/gpu", "4")
	f.createPlacement(utiltesting.MakePlacement("gpu", f.ns).NumberOfClusters(1))
	f.createIntent("big", "cpu", "64")
	f.createPlacement(utiltesting.MakePlacement("big", f.ns).NumberOfClusters(1))

	for _, name := range satisfied {
		f.waitCondition(name, clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionTrue, "AllDecisionsScheduled")
	}
	for _, name := range []string{"gpu", "big"} {
		f.waitCondition(name, clusterv1beta1.PlacementConditionSatisfied, metav1.ConditionFalse, "NoManagedClusterMatched")
	}
	framework.Eventually(t, func(ctx context.Context) error {
		if works := f.manifestWorks(ctx); len(works) != 2*len(satisfied) {
			return fmt.Errorf("%d ManifestWorks, want %d", len(works), 2*len(satisfied))
		}
		return nil
	})
	decisions, works := f.state(t.Context())

	t.Run("a heartbeat schedules nothing", func(t *testing.T) {
		before := f.quiet(t)
		for range 3 {
			for _, s := range clusters {
				f.report(s)
			}
		}
		f.holds(t, 3*time.Second, before, decisions, works)
	})

	t.Run("reports that change nothing a decision depends on move nothing", func(t *testing.T) {
		before := f.quiet(t)
		for round := range 10 {
			for _, s := range clusters {
				// A few millicores come and go on one node, as pods start and stop.
				f.pods[s] = nil
				if round%2 == 0 {
					f.pods[s] = []*corev1.Pod{utiltesting.MakePod("default", "sidecar", f.nodes[s][0].Name,
						corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(fmt.Sprintf("%dm", 10+round))})}
				}
				f.report(s)
			}
		}
		f.holds(t, 3*time.Second, before, decisions, works)
	})

	t.Run("a work agent's status update rewrites no ManifestWork", func(t *testing.T) {
		before := f.quiet(t)
		requests, err := framework.APIRequests(t.Context(), fleet.Hub)
		if err != nil {
			t.Fatal(err)
		}
		// As OCM's work agent reports what it applied: the hub's delivery looks at the intent
		// again, and finds every ManifestWork as it wants it.
		for key := range works {
			ns, name, _ := strings.Cut(key, "/")
			w, err := f.works.WorkV1().ManifestWorks(ns).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			meta.SetStatusCondition(&w.Status.Conditions, metav1.Condition{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete"})
			if _, err := f.works.WorkV1().ManifestWorks(ns).UpdateStatus(t.Context(), w, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		framework.Consistently(t, 3*time.Second, func(ctx context.Context) error {
			now, err := framework.APIRequests(ctx, fleet.Hub)
			if err != nil {
				return err
			}
			if n := now["PUT manifestworks"] - requests["PUT manifestworks"]; n > 0 {
				return fmt.Errorf("%v ManifestWorks rewritten", n)
			}
			if got := f.cycles(ctx); got != before {
				return fmt.Errorf("%v cycles ran, want none", got-before)
			}
			return nil
		})
		_, works = f.state(t.Context())
	})

	t.Run("room freed on one cluster schedules the placement waiting for it, and no other", func(t *testing.T) {
		before := f.quiet(t)
		f.nodes["b"] = append(f.nodes["b"], utiltesting.MakeNode("b-gpu").Resource(corev1.ResourceCPU, "32").
			Resource(corev1.ResourceMemory, "128Gi").Resource(corev1.ResourcePods, "110").Resource("nvidia.com/gpu", "4").Obj())
		f.report("b")
		f.waitDecided("gpu", f.names("b")...)
		framework.Consistently(t, 3*time.Second, func(ctx context.Context) error {
			if got := f.cycles(ctx); got != before+1 {
				return fmt.Errorf("%v cycles since the room was freed, want 1 (the waiting placement's)", got-before)
			}
			if got, _, err := f.decided(ctx, "big"); err != nil || len(got) > 0 {
				return fmt.Errorf("big decides %v (%v), want nothing", got, err)
			}
			got, _ := f.state(ctx)
			delete(got, "gpu")
			if diff := cmp.Diff(decisions, got); diff != "" {
				return fmt.Errorf("the other placements' decisions changed (-before,+now):\n%s", diff)
			}
			return nil
		})
	})
}

// report writes cluster s's ClusterInventory as its agent does: the whole status, computed
// from its nodes and pods, with a new revision and observedAt.
func (f *steadyFleet) report(s string) {
	f.t.Helper()
	name := f.names(s)[0]
	ctx := f.t.Context()
	status := utiltesting.InventoryStatus(f.nodes[s], f.pods[s]...)
	status.ObservedAt = metav1.NewTime(time.Now())
	status.AgentVersion = "test"
	invs := f.ff.FleetfitV1alpha1().ClusterInventories(name)
	inv, err := invs.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := fleet.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}},
			metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			f.t.Fatal(err)
		}
		inv, err = invs.Create(ctx, &v1alpha1.ClusterInventory{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: name}}, metav1.CreateOptions{})
		f.t.Cleanup(func() { _ = invs.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	if err != nil {
		f.t.Fatal(err)
	}
	status.Revision = inv.Status.Revision + 1
	inv.Status = status
	if _, err := invs.UpdateStatus(ctx, inv, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// createIntent creates the HPAIntent of placement name: one replica needing amount of
// resource on one node, delivering a Deployment.
func (f *steadyFleet) createIntent(name string, res corev1.ResourceName, amount string) {
	f.t.Helper()
	one := int32(1)
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1"}}},
			},
		},
	}
	requirement := utiltesting.MakeResource("amount", string(res)).Requests(amount)
	if res != corev1.ResourceCPU {
		requirement = requirement.Limits(amount)
	}
	in := utiltesting.MakeHPAIntent(name, f.ns).Placement(name).
		Consumer(utiltesting.MakeConsumer("app").Target("Deployment", name, "main").Requirement(requirement.Obj()).Obj()).
		Manifest(deploy).Obj()
	if _, err := f.ff.FleetfitV1alpha1().HPAIntents(f.ns).Create(f.t.Context(), in, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// manifestWorks returns the resource version of every ManifestWork on the env's clusters, by
// namespace/name.
func (f *steadyFleet) manifestWorks(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, cluster := range f.names("a", "b", "c", "d") {
		list, err := f.works.WorkV1().ManifestWorks(cluster).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, w := range list.Items {
			out[w.Namespace+"/"+w.Name] = string(w.UID) + "@" + w.ResourceVersion
		}
	}
	return out
}

// state returns every placement's decided clusters and every ManifestWork's version.
func (f *steadyFleet) state(ctx context.Context) (map[string][]string, map[string]string) {
	decisions := map[string][]string{}
	for _, name := range []string{"web-1", "web-2", "web-3", "gpu", "big"} {
		got, _, err := f.decided(ctx, name)
		if err == nil && len(got) > 0 {
			decisions[name] = got
		}
	}
	return decisions, f.manifestWorks(ctx)
}

// cycles returns the hub's count of scheduling cycles, or -1 when it cannot be read.
func (f *steadyFleet) cycles(ctx context.Context) float64 {
	v, found, err := framework.HubMetrics(ctx, fleet.Hub, f.hub, cyclesMetric)
	if err != nil || !found {
		return -1
	}
	return v
}

// quiet waits until the hub has run no cycle for two seconds and returns its cycle count.
func (f *steadyFleet) quiet(t *testing.T) float64 {
	t.Helper()
	var last float64 = -1
	since := time.Now()
	framework.Eventually(t, func(ctx context.Context) error {
		n := f.cycles(ctx)
		if n < 0 || n != last {
			last, since = n, time.Now()
			return fmt.Errorf("the hub ran cycles (%v so far)", n)
		}
		if time.Since(since) < 2*time.Second {
			return fmt.Errorf("quiet for %s only", time.Since(since).Round(time.Millisecond))
		}
		return nil
	})
	return last
}

// holds checks for d that the hub runs no cycle and that no decision and no ManifestWork
// changes.
func (f *steadyFleet) holds(t *testing.T, d time.Duration, cycles float64, decisions map[string][]string, works map[string]string) {
	t.Helper()
	framework.Consistently(t, d, func(ctx context.Context) error {
		if got := f.cycles(ctx); got != cycles {
			return fmt.Errorf("%v cycles ran, want none", got-cycles)
		}
		gotDecisions, gotWorks := f.state(ctx)
		if diff := cmp.Diff(decisions, gotDecisions); diff != "" {
			return fmt.Errorf("decisions changed (-before,+now):\n%s", diff)
		}
		if diff := cmp.Diff(works, gotWorks); diff != "" {
			return fmt.Errorf("ManifestWorks changed (-before,+now):\n%s", diff)
		}
		return nil
	})
	if !slices.Equal(slices.Sorted(maps.Keys(works)), slices.Sorted(maps.Keys(f.manifestWorks(t.Context())))) {
		t.Error("the set of ManifestWorks changed")
	}
}

// TestPlacementsScheduledTogetherSpread: placements whose cycles run together see each other's
// new decisions (the cache assumes them before they are written), so Balance spreads them
// instead of piling them onto the cluster that was least used when they all started.
func TestPlacementsScheduledTogetherSpread(t *testing.T) {
	f := &steadyFleet{env: newEnv(t, "together"), nodes: map[string][]*corev1.Node{}, pods: map[string][]*corev1.Pod{}}
	f.ff = fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
	f.works = workclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
	clusters := []string{"a", "b", "c", "d"}
	for _, s := range clusters {
		f.createCluster(f.cluster(s))
		f.nodes[s] = []*corev1.Node{utiltesting.MakeNode(s+"-n0").
			Resource(corev1.ResourceCPU, "64").Resource(corev1.ResourceMemory, "256Gi").Resource(corev1.ResourcePods, "110").Obj()}
		f.report(s)
	}
	names := []string{"p1", "p2", "p3", "p4"}
	for _, name := range names {
		f.createIntent(name, "cpu", "1")
		f.createPlacement(utiltesting.MakePlacement(name, f.ns).NumberOfClusters(1))
	}
	f.startHub()
	used := map[string]string{}
	framework.Eventually(t, func(ctx context.Context) error {
		clear(used)
		for _, name := range names {
			got, _, err := f.decided(ctx, name)
			if err != nil || len(got) != 1 {
				return fmt.Errorf("%s decides %v (%v)", name, got, err)
			}
			if other, ok := used[got[0]]; ok {
				return fmt.Errorf("%s and %s both decide %s", other, name, got[0])
			}
			used[got[0]] = name
		}
		return nil
	})
}

// TestDecisionsHoldUntilRebalance: with OCM's default prioritizers, a new cluster that Balance
// prefers does not move a placement's decision (OCM's scheduler would move it on the cluster's
// arrival); annotating the placement with fleetfit.io/rebalance does, once, and the hub
// removes the annotation.
func TestDecisionsHoldUntilRebalance(t *testing.T) {
	e := newEnv(t, "rebalance")
	e.createCluster(e.cluster("b"))
	e.startHub()
	for _, name := range []string{"p", "q1", "q2"} {
		e.createPlacement(utiltesting.MakePlacement(name, e.ns).NumberOfClusters(1))
		e.waitDecided(name, e.names("b")...)
	}
	// For p, b now scores Balance -100 (two other placements decide it) + Steady 100, and a
	// would score Balance 100: OCM's cycle would move p to a.
	e.createCluster(e.cluster("a"))
	e.resync("p")
	framework.Consistently(t, 2*time.Second, func(ctx context.Context) error {
		for _, name := range []string{"p", "q1", "q2"} {
			if got, _, err := e.decided(ctx, name); err != nil || !slices.Equal(got, e.names("b")) {
				return fmt.Errorf("%s decides %v (%v), want it held on b", name, got, err)
			}
		}
		return nil
	})

	e.updatePlacement("p", func(p *clusterv1beta1.Placement) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations["fleetfit.io/rebalance"] = "now"
	})
	e.waitDecided("p", e.names("a")...)
	framework.Eventually(t, func(ctx context.Context) error {
		p, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, "p", metav1.GetOptions{})
		if err == nil && p.Annotations["fleetfit.io/rebalance"] != "" {
			err = fmt.Errorf("the rebalance annotation is still there")
		}
		return err
	})
	events, err := e.events(t.Context(), "p", "DecidedClustersRemoved")
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, ev := range events {
		if ev.Action == "Rebalance" {
			notes = append(notes, ev.Note)
		}
	}
	want := e.names("b")[0] + " left the decisions of placement p: a rebalance was asked for with the fleetfit.io/rebalance annotation"
	if diff := cmp.Diff([]string{want}, notes); diff != "" {
		t.Errorf("DecidedClustersRemoved events for the rebalance (-want,+got):\n%s", diff)
	}
}
