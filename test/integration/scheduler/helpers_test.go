package scheduler

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// env is one test's namespace, cluster set and clients.
type env struct {
	t          *testing.T
	ns         string
	set        string
	clusters   clusterclient.Interface
	kubeconfig string
}

// newEnv creates a namespace and an exclusive cluster set of the same name, bound to the
// namespace.
func newEnv(t *testing.T, name string) *env {
	t.Helper()
	ctx := t.Context()
	e := &env{t: t, ns: name, set: name, clusters: clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig())}
	if _, err := fleet.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, utiltesting.MakeExclusiveClusterSet(name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSetBindings(name).Create(ctx, utiltesting.MakeClusterSetBinding(name, name), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc, err := framework.Kubeconfig(fleet.Hub.AdminConfig(), "hub")
	if err != nil {
		t.Fatal(err)
	}
	e.kubeconfig = filepath.Join(t.TempDir(), "hub.kubeconfig")
	if err := os.WriteFile(e.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	return e
}

// cluster returns a cluster builder named <set>-<suffix> in the env's set.
func (e *env) cluster(suffix string) *utiltesting.ClusterWrapper {
	return utiltesting.MakeCluster(e.set + "-" + suffix).ClusterSet(e.set)
}

// createCluster creates a ManagedCluster with its status.
func (e *env) createCluster(w *utiltesting.ClusterWrapper) *clusterv1.ManagedCluster {
	e.t.Helper()
	ctx := e.t.Context()
	want := w.Obj()
	got, err := e.clusters.ClusterV1().ManagedClusters().Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	if !apiequalStatus(want.Status) {
		got.Status = want.Status
		if got, err = e.clusters.ClusterV1().ManagedClusters().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	e.t.Cleanup(func() {
		_ = e.clusters.ClusterV1().ManagedClusters().Delete(context.Background(), got.Name, metav1.DeleteOptions{})
	})
	return got
}

func apiequalStatus(s clusterv1.ManagedClusterStatus) bool {
	return len(s.ClusterClaims) == 0 && len(s.Allocatable) == 0 && len(s.Capacity) == 0 && s.Version.Kubernetes == ""
}

// createPlacement creates a placement in the env's namespace.
func (e *env) createPlacement(w *utiltesting.PlacementWrapper) *clusterv1beta1.Placement {
	e.t.Helper()
	p := w.Obj()
	p.Namespace = e.ns
	got, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(e.t.Context(), p, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// startHub runs fleetfit-hub in-process with extra flags until the test ends.
func (e *env) startHub(args ...string) {
	e.t.Helper()
	framework.RunHub(e.t, fleet.Hub.AdminConfig(), append([]string{"--workers=2"}, args...)...)
}

// decided returns the clusters in a placement's decisions, in the order of the decision
// objects' names and within each object.
func (e *env) decided(ctx context.Context, placement string) ([]string, []clusterv1beta1.PlacementDecision, error) {
	list, err := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: placement}).String(),
	})
	if err != nil {
		return nil, nil, err
	}
	items := list.Items
	slices.SortFunc(items, func(a, b clusterv1beta1.PlacementDecision) int { return decisionIndex(a.Name) - decisionIndex(b.Name) })
	var names []string
	for _, d := range items {
		for _, cd := range d.Status.Decisions {
			names = append(names, cd.ClusterName)
		}
	}
	return names, items, nil
}

func decisionIndex(name string) int {
	var n int
	_, _ = fmt.Sscanf(name[strings.LastIndex(name, "-")+1:], "%d", &n)
	return n
}

// waitDecided waits until the placement decides exactly want (in order) and returns the
// placement then.
func (e *env) waitDecided(placement string, want ...string) *clusterv1beta1.Placement {
	e.t.Helper()
	var p *clusterv1beta1.Placement
	framework.Eventually(e.t, func(ctx context.Context) error {
		got, _, err := e.decided(ctx, placement)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("decided %v, want %v", got, want)
		}
		p, err = e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, placement, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if int(p.Status.NumberOfSelectedClusters) != len(want) {
			return fmt.Errorf("status.numberOfSelectedClusters is %d, want %d", p.Status.NumberOfSelectedClusters, len(want))
		}
		return nil
	})
	return p
}

// waitCondition waits until the placement has the condition with status and reason.
func (e *env) waitCondition(placement, condType string, status metav1.ConditionStatus, reason string) *clusterv1beta1.Placement {
	e.t.Helper()
	var p *clusterv1beta1.Placement
	framework.Eventually(e.t, func(ctx context.Context) error {
		var err error
		p, err = e.clusters.ClusterV1beta1().Placements(e.ns).Get(ctx, placement, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, condType)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("condition %s is %+v, want %s/%s", condType, c, status, reason)
		}
		return nil
	})
	return p
}

// names returns the env's cluster names for suffixes.
func (e *env) names(suffixes ...string) []string {
	out := make([]string, len(suffixes))
	for i, s := range suffixes {
		out[i] = e.set + "-" + s
	}
	return out
}

var _ = apierrors.IsNotFound
