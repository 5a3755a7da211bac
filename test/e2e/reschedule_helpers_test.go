package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/typed/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/scheduler"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// The rescheduling test has two managed clusters of its own, in a cluster set of its own, so
// that no other test's placement sees them and no other test's workload takes their room.
const (
	// rsA is where both workloads are first decided; rsB is the replacement.
	rsA = "cluster5"
	rsB = "cluster6"
	// rsSet is the exclusive cluster set of rsA and, once the workloads run on rsA, rsB.
	rsSet = "reschedule-e2e"
	// rsNS holds the Placements and HPAIntents on the hub and the workloads on the spokes.
	rsNS = "reschedule-e2e"
	// rsMover may move (IfUnschedulable) and needs L4 GPUs; rsStayer may not (Never) and
	// needs T4 GPUs, so that each has a node of its own on every cluster.
	rsMover, rsMoverGPU   = "mover", "L4"
	rsStayer, rsStayerGPU = "stayer", "T4"
	// rsThreshold is the intents' spec.rescheduling.unschedulableFor, the least the API allows.
	rsThreshold = 30 * time.Second
	// rsMoveTimeout bounds the wait for the hub to move a workload once its pods wait: the
	// threshold, the agent's report of the pods and a placement cycle, on a loaded 2-core
	// machine.
	rsMoveTimeout = rsThreshold + 2*time.Minute
	// rsHold is how long rsB is kept from running the moved workload, during which nothing
	// may be taken away from rsA.
	rsHold = 30 * time.Second
	// rsQuota is the ResourceQuota on rsB that admits no pod until the test deletes it.
	rsQuota = "no-pods-yet"
	// rsLogLines is how much of each process's log a failure shows.
	rsLogLines = 60
)

// rsNodes are each cluster's nodes: two L4 and two T4 GPUs, each model on a node of its own,
// and a node without GPUs.
func rsNodes() []*corev1.Node {
	return []*corev1.Node{gpuNode("l4-0", rsMoverGPU, "2"), gpuNode("t4-0", rsStayerGPU, "2"), cpuNode("cpu-0")}
}

// rsDeployment is a workload as its author wrote it: two replicas and nothing about GPUs.
func rsDeployment(name string) *appsv1.Deployment {
	l := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// rsIntent is an intent whose replicas need one GPU of the product each, with the policy and
// rsThreshold; its Placement has its name.
func rsIntent(name, product string, policy v1alpha1.ReschedulingPolicy) *v1alpha1.HPAIntent {
	in := ut.MakeHPAIntent(name, rsNS).Placement(name).Consumer(
		ut.MakeConsumer(name).Target("Deployment", name, name).Requirement(
			ut.MakeResource("cpu", "cpu").Requests("1").Obj(),
			ut.MakeResource("gpu", string(gpu)).Limits("1").Obj(),
			ut.MakeFeature("product", gpuProduct).Values(product).Obj(),
		).Obj(),
	).Manifest(rsDeployment(name)).Obj()
	in.Spec.Rescheduling = &v1alpha1.Rescheduling{Policy: policy, UnschedulableFor: &metav1.Duration{Duration: rsThreshold}}
	return in
}

// rsPlacement asks for one cluster of rsSet. Steady and HardwareFit only: OCM's default
// Balance could move a placement between the clusters on any cycle, and the test must see
// only the moves the hub makes for unschedulable pods.
func rsPlacement(name string) *clusterv1beta1.Placement {
	return ut.MakePlacement(name, rsNS).NumberOfClusters(1).ClusterSets(rsSet).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("Steady", 1).BuiltIn("HardwareFit", 1).Obj()
}

// rsStartSpoke starts a managed cluster for the test (see startExtraSpoke) with rsNodes,
// registered on the hub in the cluster set set ("" for none yet; the hub forgets it when the
// test ends), with delivery into rsNS granted, fleetfit-agent and OCM's work agent running,
// and waits until its agent reports every node Ready. It returns the control plane and the
// processes whose logs a failure shows.
func rsStartSpoke(t *testing.T, name, set string) (*framework.ControlPlane, []*framework.Component) {
	t.Helper()
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig()).ClusterV1().ManagedClusters()
	mc := ut.MakeCluster(name).Label("name", name).ClusterSet(set).Obj()
	if _, err := clusters.Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := clusters.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ManagedCluster %s: %v", name, err)
		}
	})
	spoke, logs := startExtraSpoke(t, name, rsNodes())
	if err := framework.GrantDelivery(ctx, spoke, rsNS); err != nil {
		t.Fatal(err)
	}
	agent, err := framework.StartAgentProcess(ctx, hub, spoke, name, agentMinInterval)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Stop)
	work, err := framework.StartOCMWorkAgent(ctx, hub, spoke, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(work.Stop)
	logs = append(logs, agent, work)
	waitSchedulable(t, spoke, rsNodes())
	inventories := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(name)
	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := inventories.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got, want := inv.Status.ReadyNodeCount, int32(len(rsNodes())); got != want {
			return fmt.Errorf("inventory of %s shows %d ready nodes, want %d", name, got, want)
		}
		return nil
	})
	return spoke, logs
}

// rsExplain asks the hub to explain the placement, as `fleetfit explain placement` does.
func rsExplain(ctx context.Context, hub framework.Endpoint, placement string) (*scheduler.Explanation, error) {
	body, err := framework.HubGet(ctx, fleet.Hub, hub, "/debug/placements/"+rsNS+"/"+placement)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	var e scheduler.Explanation
	if err := json.NewDecoder(body).Decode(&e); err != nil {
		return nil, fmt.Errorf("decoding the explanation of %s: %w", placement, err)
	}
	return &e, nil
}

// rsPods sorts the workload's pods on a spoke: those running and ready, by name, and those
// kube-scheduler found no node for (PodScheduled=False, Unschedulable), with its message.
func rsPods(ctx context.Context, spoke *framework.ControlPlane, name string) (ready map[string]rsRunning, unschedulable map[string]string, all int, err error) {
	pods, err := spoke.AdminClient().CoreV1().Pods(rsNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, nil, 0, err
	}
	ready, unschedulable = map[string]rsRunning{}, map[string]string{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		all++
		for _, c := range p.Status.Conditions {
			switch {
			case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.Phase == corev1.PodRunning:
				ready[p.Name] = rsRunning{uid: string(p.UID), node: p.Spec.NodeName}
			case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
				unschedulable[p.Name] = c.Message
			}
		}
	}
	return ready, unschedulable, all, nil
}

// rsRunning identifies a running pod: a pod deleted and made again has another UID.
type rsRunning struct{ uid, node string }

// rsEventually retries fn until it returns nil, failing the test after d with what was
// expected and fn's last error.
func rsEventually(t *testing.T, d time.Duration, expected string, fn func(ctx context.Context) error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), framework.PollInterval, d, true, func(ctx context.Context) (bool, error) {
		err := fn(ctx)
		if err != nil && ctx.Err() != nil {
			return false, nil // cut short by the timeout; the previous error says more
		}
		last = err
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("expected %s within %v; last seen: %v", expected, d, last)
	}
}

// rsDecided returns the clusters the placement's PlacementDecisions name, sorted.
func rsDecided(ctx context.Context, clusters clusterclient.Interface, placement string) ([]string, error) {
	list, err := clusters.ClusterV1beta1().PlacementDecisions(rsNS).List(ctx, metav1.ListOptions{
		LabelSelector: clusterv1beta1.PlacementLabel + "=" + placement,
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

// rsWorkLabels selects the intent's ManifestWorks, as the hub labels them.
func rsWorkLabels(intent string) string {
	return labels.SelectorFromSet(labels.Set{
		v1alpha1.LabelIntentNamespace: rsNS, v1alpha1.LabelIntentName: v1alpha1.IntentLabelValue(intent),
	}).String()
}

// rsWork returns the intent's ManifestWork on the cluster, NotFound when it has none.
func rsWork(ctx context.Context, works workv1client.WorkV1Interface, cluster, intent string) (*workv1.ManifestWork, error) {
	list, err := works.ManifestWorks(cluster).List(ctx, metav1.ListOptions{LabelSelector: rsWorkLabels(intent)})
	if err != nil {
		return nil, err
	}
	switch len(list.Items) {
	case 0:
		return nil, apierrors.NewNotFound(workv1.Resource("manifestworks"), intent)
	case 1:
		return &list.Items[0], nil
	}
	return nil, fmt.Errorf("%s has %d ManifestWorks of %s, want at most one", cluster, len(list.Items), intent)
}

// rsPokeReplicaSets annotates the workload's ReplicaSets on the spoke, which makes the
// ReplicaSet controller sync them now rather than after its back-off.
func rsPokeReplicaSets(ctx context.Context, spoke *framework.ControlPlane, name string) error {
	sets := spoke.AdminClient().AppsV1().ReplicaSets(rsNS)
	list, err := sets.List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return err
	}
	poke := fmt.Sprintf(`{"metadata":{"annotations":{"e2e.fleetfit.io/poked":%q}}}`, time.Now().Format(time.RFC3339Nano))
	for _, rs := range list.Items {
		if _, err := sets.Patch(ctx, rs.Name, types.MergePatchType, []byte(poke), metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// rsCheckWarning checks that the hub recorded a Warning event on the intent that names the
// cluster it moves away from.
func rsCheckWarning(t *testing.T, hub *framework.ControlPlane, intent, from string) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		events, err := hub.AdminClient().EventsV1().Events(rsNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var seen []string
		for _, ev := range events.Items {
			if ev.Regarding.Kind != "HPAIntent" || ev.Regarding.Name != intent {
				continue
			}
			if ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Note, from) {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Note))
		}
		return fmt.Errorf("HPAIntent %s has events %q, want a Warning naming %s", intent, seen, from)
	})
}

// rsDeleteIntents deletes the test's intents while the spokes still run, so that their
// ManifestWorks go and no finalizer keeps them, and then their Placements.
func rsDeleteIntents(t *testing.T, intents fleetfitv1alpha1.HPAIntentInterface, clusters clusterclient.Interface) {
	ctx := context.Background()
	for _, name := range []string{rsMover, rsStayer} {
		if err := intents.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting HPAIntent %s: %v", name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, framework.PollInterval, framework.EventuallyTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := intents.List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("the test's HPAIntents are still there %v after their deletion", framework.EventuallyTimeout)
	}
	for _, name := range []string{rsMover, rsStayer} {
		if err := clusters.ClusterV1beta1().Placements(rsNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Placement %s: %v", name, err)
		}
	}
}

// rsDump shows, when the test failed, the intents' status, the decisions, the ManifestWorks,
// the workloads' pods on each spoke and the end of every process's log.
func rsDump(t *testing.T, clusters clusterclient.Interface, intents fleetfitv1alpha1.HPAIntentInterface, works workv1client.WorkV1Interface,
	spokes map[string]*framework.ControlPlane, logs []*framework.Component) {
	if !t.Failed() {
		return
	}
	ctx := context.Background()
	for _, name := range []string{rsMover, rsStayer} {
		if in, err := intents.Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Logf("intent %s status: %+v", name, in.Status)
		}
		got, err := rsDecided(ctx, clusters, name)
		t.Logf("placement %s decides %v (%v)", name, got, err)
	}
	for _, cluster := range slices.Sorted(maps.Keys(spokes)) {
		if list, err := works.ManifestWorks(cluster).List(ctx, metav1.ListOptions{}); err == nil {
			for _, w := range list.Items {
				t.Logf("%s: ManifestWork %s deleting=%v conditions %+v", cluster, w.Name, w.DeletionTimestamp != nil, w.Status.Conditions)
			}
		}
		if pods, err := spokes[cluster].AdminClient().CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				t.Logf("%s: pod %s/%s on %q: %s %+v", cluster, p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
			}
		}
	}
	for _, c := range logs {
		t.Logf("--- %s ---\n%s", c.Name(), c.LogTail(rsLogLines))
	}
}
