package reschedule

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	deployhub "github.com/fleetfit/fleetfit/deploy/hub"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// env is one test's namespace (also the name of its cluster set) and clients.
type env struct {
	t        *testing.T
	ns       string
	kube     kubernetes.Interface
	clusters clusterclient.Interface
	fleetfit fleetfitclient.Interface
}

// newEnv creates a namespace named <name>-<random> and an exclusive cluster set of the same
// name bound to it.
func newEnv(t *testing.T, name string) *env {
	t.Helper()
	ctx := t.Context()
	cfg := fleet.Hub.AdminConfig()
	e := &env{t: t, kube: fleet.Hub.AdminClient(), clusters: clusterclient.NewForConfigOrDie(cfg), fleetfit: fleetfitclient.NewForConfigOrDie(cfg)}
	// A generated name lets the test run again (-count) on the same hub, where the namespaces
	// of earlier runs stay terminating (no controller empties them).
	ns, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.ns = ns.Name
	t.Cleanup(func() { _ = e.kube.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{}) })
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, utiltesting.MakeExclusiveClusterSet(e.ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = e.clusters.ClusterV1beta2().ManagedClusterSets().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSetBindings(e.ns).Create(ctx, utiltesting.MakeClusterSetBinding(e.ns, e.ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// startHub runs fleetfit-hub in-process as its ServiceAccount with deploy/hub's RBAC, so that
// every write the rescheduling needs is one the deployed hub may make.
func (e *env) startHub() {
	e.t.Helper()
	cfg := fleet.Hub.AdminConfig()
	if err := framework.Apply(e.t.Context(), cfg, deployhub.RBAC); err != nil {
		e.t.Fatal(err)
	}
	hubUser, err := fleet.Hub.UserConfig(deployhub.ServiceAccountUser, "system:serviceaccounts", "system:serviceaccounts:"+deployhub.Namespace)
	if err != nil {
		e.t.Fatal(err)
	}
	framework.RunHub(e.t, hubUser, "--workers=2", "--startup-grace=0")
}

// gpuNode is a node with gpus GPUs, 16 cpu and 64Gi of memory.
func gpuNode(name, gpus string) *corev1.Node {
	return utiltesting.MakeNode(name).Resource(corev1.ResourceCPU, "16").Resource(corev1.ResourceMemory, "64Gi").
		Resource("nvidia.com/gpu", gpus).Obj()
}

// createCluster creates an available managed cluster of the env's set, named <ns>-<suffix>,
// whose agent has just reported one node, and returns its name.
func (e *env) createCluster(suffix string, node *corev1.Node) string {
	e.t.Helper()
	name := e.ns + "-" + suffix
	ctx := e.t.Context()
	want := utiltesting.MakeCluster(name).ClusterSet(e.ns).Available().Obj()
	got, err := e.clusters.ClusterV1().ManagedClusters().Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		_ = e.clusters.ClusterV1().ManagedClusters().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	got.Status = want.Status
	if _, err := e.clusters.ClusterV1().ManagedClusters().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = e.kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	inv := utiltesting.MakeInventory(name, time.Now(), []*corev1.Node{node})
	created, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(name).Create(ctx, inv.DeepCopy(), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	created.Status = inv.Status
	if _, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(name).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	return name
}

// createWorkload creates a Placement of one cluster of the env's set and its intent, whose
// consumer needs one GPU, with the rescheduling policy given.
func (e *env) createWorkload(name string, policy *v1alpha1.Rescheduling) {
	e.t.Helper()
	ctx := e.t.Context()
	in := utiltesting.MakeHPAIntent(name, e.ns).Placement(name).Consumer(
		utiltesting.MakeConsumer("trainer").Target("Deployment", name, "main").Replicas(1).Requirement(
			utiltesting.MakeResource("gpu", "nvidia.com/gpu").Requests("1").Obj()).Obj()).Obj()
	in.Spec.Rescheduling = policy
	if _, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Create(ctx, in, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	p := utiltesting.MakePlacement(name, e.ns).NumberOfClusters(1).ClusterSets(e.ns).Obj()
	if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// decided returns the clusters the placement's decisions name, sorted.
func (e *env) decided(ctx context.Context, placement string) ([]string, error) {
	list, err := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: placement}).String(),
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range list.Items {
		for _, cd := range d.Status.Decisions {
			out = append(out, cd.ClusterName)
		}
	}
	slices.Sort(out)
	return out, nil
}

// waitDecidedOne waits until the placement decides one cluster and returns it.
func (e *env) waitDecidedOne(placement string) string {
	e.t.Helper()
	var got []string
	framework.Eventually(e.t, func(ctx context.Context) error {
		var err error
		if got, err = e.decided(ctx, placement); err != nil {
			return err
		}
		if len(got) != 1 {
			return fmt.Errorf("placement %s decides %v, want one cluster", placement, got)
		}
		return nil
	})
	return got[0]
}

// reportUnschedulable writes into the cluster's ClusterInventory, as its agent would, that
// pods of the intent have been unschedulable since since.
func (e *env) reportUnschedulable(cluster, intent string, pods int32, since time.Time, message string) {
	e.t.Helper()
	inventories := e.fleetfit.FleetfitV1alpha1().ClusterInventories(cluster)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		inv, err := inventories.Get(e.t.Context(), cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		inv.Status.ObservedAt = metav1.Now()
		inv.Status.Unschedulable = []v1alpha1.UnschedulableWorkload{{
			IntentNamespace: e.ns, IntentName: intent, PodCount: pods, Since: metav1.NewTime(since), Message: message,
		}}
		_, err = inventories.UpdateStatus(e.t.Context(), inv, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// waitIntent waits until the intent passes check and returns it.
func (e *env) waitIntent(name string, check func(*v1alpha1.HPAIntent) error) *v1alpha1.HPAIntent {
	e.t.Helper()
	var in *v1alpha1.HPAIntent
	framework.Eventually(e.t, func(ctx context.Context) error {
		var err error
		if in, err = e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		return check(in)
	})
	return in
}

// rescheduled checks the intent's Rescheduled condition.
func rescheduled(status metav1.ConditionStatus, reason string) func(*v1alpha1.HPAIntent) error {
	return func(in *v1alpha1.HPAIntent) error {
		cond := meta.FindStatusCondition(in.Status.Conditions, "Rescheduled")
		if cond == nil || cond.Status != status || cond.Reason != reason {
			return fmt.Errorf("condition Rescheduled is %+v, want %s %s", cond, status, reason)
		}
		return nil
	}
}

// intentEvents lists the events.k8s.io/v1 Events about the intent with the reason.
func (e *env) intentEvents(ctx context.Context, intent, reason string) ([]eventsv1.Event, error) {
	list, err := e.kube.EventsV1().Events(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "HPAIntent" && ev.Regarding.Name == intent && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out, nil
}
