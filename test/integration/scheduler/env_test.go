package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// updateCluster changes a ManagedCluster's metadata or spec, retrying on conflicts.
func (e *env) updateCluster(name string, mutate func(*clusterv1.ManagedCluster)) *clusterv1.ManagedCluster {
	e.t.Helper()
	return updateWithRetry(e.t, func(ctx context.Context) (*clusterv1.ManagedCluster, error) {
		cl, err := e.clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		mutate(cl)
		return e.clusters.ClusterV1().ManagedClusters().Update(ctx, cl, metav1.UpdateOptions{})
	})
}

// updateClusterStatus changes a ManagedCluster's status, retrying on conflicts.
func (e *env) updateClusterStatus(name string, mutate func(*clusterv1.ManagedClusterStatus)) *clusterv1.ManagedCluster {
	e.t.Helper()
	return updateWithRetry(e.t, func(ctx context.Context) (*clusterv1.ManagedCluster, error) {
		cl, err := e.clusters.ClusterV1().ManagedClusters().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		mutate(&cl.Status)
		return e.clusters.ClusterV1().ManagedClusters().UpdateStatus(ctx, cl, metav1.UpdateOptions{})
	})
}

// updatePlacement changes a Placement's metadata or spec, retrying on conflicts (the hub
// writes its status concurrently).
func (e *env) updatePlacement(name string, mutate func(*clusterv1beta1.Placement)) *clusterv1beta1.Placement {
	e.t.Helper()
	return updateWithRetry(e.t, func(ctx context.Context) (*clusterv1beta1.Placement, error) {
		p, err := e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		mutate(p)
		return e.clusters.ClusterV1beta1().Placements(e.ns).Update(ctx, p, metav1.UpdateOptions{})
	})
}

func updateWithRetry[T any](t *testing.T, update func(ctx context.Context) (T, error)) T {
	t.Helper()
	var out T
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		out, err = update(t.Context())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// createClusters creates many ManagedClusters (and their status) with a bounded number of
// concurrent requests, and deletes them the same way when the test ends.
func (e *env) createClusters(ws []*utiltesting.ClusterWrapper) {
	e.t.Helper()
	const concurrency = 8
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = w.Name
	}
	e.t.Cleanup(func() {
		_ = forEachConcurrently(names, concurrency, func(name string) error {
			err := e.clusters.ClusterV1().ManagedClusters().Delete(context.Background(), name, metav1.DeleteOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	})
	ctx := e.t.Context()
	err := forEachConcurrently(ws, concurrency, func(w *utiltesting.ClusterWrapper) error {
		want := w.Obj()
		got, err := e.clusters.ClusterV1().ManagedClusters().Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !apiequality.Semantic.DeepEqual(want.Status, clusterv1.ManagedClusterStatus{}) {
			got.Status = want.Status
			_, err = e.clusters.ClusterV1().ManagedClusters().UpdateStatus(ctx, got, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// forEachConcurrently calls fn for every item with at most limit calls at a time and returns
// every error.
func forEachConcurrently[T any](items []T, limit int, fn func(T) error) error {
	sem := make(chan struct{}, limit)
	errs := make([]error, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(item)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createScore creates an AddOnPlacementScore, with its status, in its cluster's namespace,
// creating the namespace first when needed.
func (e *env) createScore(s *clusterv1alpha1.AddOnPlacementScore) {
	e.t.Helper()
	ctx := e.t.Context()
	_, err := fleet.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		e.t.Fatal(err)
	}
	scores := e.clusters.ClusterV1alpha1().AddOnPlacementScores(s.Namespace)
	got, err := scores.Create(ctx, s.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	got.Status = s.Status
	if _, err := scores.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = scores.Delete(context.Background(), s.Name, metav1.DeleteOptions{}) })
}

// resyncMarker is the name of the cluster that resync writes into a decision; no such
// cluster exists.
const resyncMarker = "resync-marker.invalid"

// resync makes the hub run one more scheduling cycle of the placement and waits until that
// cycle has written its decisions. It writes a cluster that does not exist into the
// placement's first PlacementDecision; the hub repairs decisions someone else changed (as
// OCM's controller does), so the marker goes away when a cycle that read it writes the
// decision back (or when an older cycle writes a different result, which the caller's next
// check sees). Use it before asserting that something did NOT change, once the hub is known
// to have seen the change that must not matter.
func (e *env) resync(placement string) {
	e.t.Helper()
	name := placement + "-decision-1"
	decisions := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns)
	updateWithRetry(e.t, func(ctx context.Context) (*clusterv1beta1.PlacementDecision, error) {
		d, err := decisions.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		d.Status.Decisions = append(d.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: resyncMarker})
		return decisions.UpdateStatus(ctx, d, metav1.UpdateOptions{})
	})
	framework.Eventually(e.t, func(ctx context.Context) error {
		d, err := decisions.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, cd := range d.Status.Decisions {
			if cd.ClusterName == resyncMarker {
				return fmt.Errorf("the hub has not rewritten %s yet: %v", name, decisionClusterNames(d.Status.Decisions))
			}
		}
		return nil
	})
}

// waitScores waits until the placement's decisions hold exactly these clusters with these
// scores.
func (e *env) waitScores(placement string, want map[string]int64) {
	e.t.Helper()
	framework.Eventually(e.t, func(ctx context.Context) error {
		_, objs, err := e.decided(ctx, placement)
		if err != nil {
			return err
		}
		got := map[string]int64{}
		for _, d := range objs {
			for _, cd := range d.Status.Decisions {
				got[cd.ClusterName] = cd.Score
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("decision scores (-want,+got):\n%s", diff)
		}
		return nil
	})
}

// decisionClusterNames lists the cluster names of a decision list, in order.
func decisionClusterNames(ds []clusterv1beta1.ClusterDecision) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.ClusterName)
	}
	return out
}

// startStoppableHub runs fleetfit-hub in-process like startHub and returns a function that
// stops it and waits until it has returned; the test's end stops it too.
func (e *env) startStoppableHub(args ...string) (stop func()) {
	e.t.Helper()
	return framework.RunHub(e.t, fleet.Hub.AdminConfig(), append([]string{"--workers=2"}, args...)...)
}

// events lists the events.k8s.io/v1 Events about the placement with the reason.
func (e *env) events(ctx context.Context, placement, reason string) ([]eventsv1.Event, error) {
	list, err := fleet.Hub.AdminClient().EventsV1().Events(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "Placement" && ev.Regarding.Name == placement && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out, nil
}

// in returns the env for a subtest: the same namespace, set and hub, with failures reported
// to t.
func (e *env) in(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

func ptrTo[T any](v T) *T { return &v }
