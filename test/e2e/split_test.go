package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/typed/fleetfit/v1alpha1"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// The split test has three managed clusters of its own, in a cluster set of its own, so that
// no other test's placement sees them and no other test's workload takes their room.
const (
	splitNS       = "split-e2e"
	splitSet      = "split-e2e"
	splitWorkload = "inference"
	splitGPU      = "L40S"
	// splitLogLines is how much of each process's log a failure shows.
	splitLogLines = 40
)

// splitCluster is one of the test's clusters: its GPU nodes, and how many replicas of two
// GPUs each they hold.
type splitCluster struct {
	name  string
	gpus  []string // free GPUs of each node
	holds int32
}

// splitClusters hold 4, 3 and 5 replicas of two GPUs each. cluster8 has 8 GPUs, as many as
// cluster7, but two of its nodes have one GPU each, which no replica can use: it holds 3
// replicas, not the 4 its total would say. Every other node has an even number of GPUs, so a
// cluster holds its replicas however kube-scheduler packs them.
var splitClusters = []splitCluster{
	{name: "cluster7", gpus: []string{"4", "4"}, holds: 4},
	{name: "cluster8", gpus: []string{"1", "1", "2", "2", "2"}, holds: 3},
	{name: "cluster9", gpus: []string{"4", "4", "2"}, holds: 5},
}

func (c splitCluster) nodes() []*corev1.Node {
	var out []*corev1.Node
	for i, g := range c.gpus {
		out = append(out, gpuNode(fmt.Sprintf("gpu-%d", i), splitGPU, g))
	}
	return out
}

// splitDeployment is the workload as its author wrote it, with its replicas, the total the
// intent divides.
func splitDeployment(replicas int32) *appsv1.Deployment {
	l := map[string]string{"app": splitWorkload}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: splitWorkload},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: splitWorkload, Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// TestSplitReplicasByPerNodeFit follows a split intent on real processes (kube-scheduler, kwok,
// OCM's work agent and fleetfit-agent on three managed clusters of the test's own,
// fleetfit-hub): 10 replicas of a Deployment that needs two L40S GPUs per replica, divided by
// capacity among clusters that hold 4, 3 and 5 replicas on their nodes.
//
// The hub's shares respect what each cluster holds node by node (cluster8's 8 GPUs hold 3
// replicas, not 4), add up to the total, and are in the intent's status; each cluster runs its
// share and no pod waits for a node; status.clusters shows every replica ready. Scaled to 14,
// more than the clusters hold together, the clusters keep what they run, the new replicas
// fill the room left (the shares become 4, 3 and 5), the 2 without room are unplaced, and
// again nothing is Pending.
func TestSplitReplicasByPerNodeFit(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	intents := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(splitNS)
	var logs []*framework.Component
	spokes := map[string]*framework.ControlPlane{}

	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: splitNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet(splitSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(splitNS).Create(ctx, ut.MakeClusterSetBinding(splitNS, splitSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, c := range splitClusters {
		spoke, l := splitStartSpoke(t, c)
		spokes[c.name] = spoke
		logs = append(logs, l...)
	}
	hubProcess, err := framework.StartHubProcess(ctx, hub, "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hubProcess.Stop)
	logs = append(logs, hubProcess)
	// Cleanups run last first: the dump while everything runs, then the intent's deletion
	// while the work agents can still remove what they applied, then the processes stop.
	t.Cleanup(func() { splitDelete(t, intents, clusters) })
	t.Cleanup(func() { splitDump(t, intents, clusters, spokes, logs) })

	placement := ut.MakePlacement(splitWorkload, splitNS).NumberOfClusters(3).ClusterSets(splitSet).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("Steady", 1).BuiltIn("HardwareFit", 1).Obj()
	if _, err := clusters.ClusterV1beta1().Placements(splitNS).Create(ctx, placement, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	intent := ut.MakeHPAIntent(splitWorkload, splitNS).Placement(splitWorkload).Split(v1alpha1.ReplicaSplit{By: v1alpha1.SplitByCapacity}).Consumer(
		ut.MakeConsumer(splitWorkload).Target("Deployment", splitWorkload, splitWorkload).Requirement(
			ut.MakeResource("cpu", "cpu").Requests("1").Obj(),
			ut.MakeResource("memory", "memory").Requests("1Gi").Limits("1Gi").Obj(),
			ut.MakeResource("gpu", string(gpu)).Limits("2").Obj(),
			ut.MakeFeature("product", gpuProduct).Values(splitGPU).Obj(),
		).Obj(),
	).Manifest(splitDeployment(10)).Obj()
	if _, err := intents.Create(ctx, intent, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// 10 replicas: shares within what each cluster holds, adding up to 10, each running whole.
	var first map[string]int32
	rsEventually(t, 3*framework.EventuallyTimeout, "10 replicas split by per-node fit, every one running", func(ctx context.Context) error {
		shares, err := splitCheck(ctx, intents, clusters, spokes, 10)
		first = shares
		return err
	})
	t.Logf("shares of 10 replicas: %v", first)

	// Scaled to 14: the clusters keep their shares and the new replicas fill the room left.
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, splitWorkload, metav1.GetOptions{})
		if err != nil {
			return err
		}
		raw, err := json.Marshal(splitDeployment(14))
		if err != nil {
			return err
		}
		in.Spec.Workload.Manifests[0].Raw = raw
		_, err = intents.Update(ctx, in, metav1.UpdateOptions{})
		return err
	})
	var second map[string]int32
	rsEventually(t, 3*framework.EventuallyTimeout, "14 replicas: 12 running where there is room, 2 unplaced", func(ctx context.Context) error {
		shares, err := splitCheck(ctx, intents, clusters, spokes, 14)
		second = shares
		return err
	})
	want := map[string]int32{}
	for _, c := range splitClusters {
		want[c.name] = c.holds
	}
	if !maps.Equal(second, want) {
		t.Errorf("shares of 14 replicas %v, want every cluster full: %v", second, want)
	}
	for cluster, n := range first {
		if second[cluster] < n {
			t.Errorf("%s ran %d replicas and was cut to %d when the total grew", cluster, n, second[cluster])
		}
	}
	in, err := intents.Get(ctx, splitWorkload, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := in.Status.Split.Unplaced; got != 2 {
		t.Errorf("status.split.unplaced %d, want the 2 replicas no cluster holds", got)
	}
}

// splitCheck checks the split of total replicas, and returns the shares it found: status.split
// divides total, each share within what its cluster holds, the shares with the 2 unplaced
// when the clusters cannot hold the total; the decisions are the clusters with a share; each
// cluster runs its share, all Ready, none waiting for a node, and a cluster without a share
// runs none; status.clusters has each share with all of it ready.
func splitCheck(ctx context.Context, intents fleetfitv1alpha1.HPAIntentInterface, clusters clusterclient.Interface,
	spokes map[string]*framework.ControlPlane, total int32) (map[string]int32, error) {
	in, err := intents.Get(ctx, splitWorkload, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s := in.Status.Split
	if s == nil || s.Replicas != total {
		return nil, fmt.Errorf("status.split %+v, want the %d replicas divided", s, total)
	}
	var holds, placed int32
	shares := map[string]int32{}
	var errs []error
	for _, c := range splitClusters {
		holds += c.holds
		n, _ := s.ShareOf(c.name)
		shares[c.name] = n
		placed += n
		if n > c.holds {
			errs = append(errs, fmt.Errorf("%s has a share of %d, but its nodes hold %d replicas", c.name, n, c.holds))
		}
	}
	if want := min(total, holds); placed != want || s.Unplaced != total-want {
		errs = append(errs, fmt.Errorf("the shares %v place %d and leave %d unplaced, want %d placed and %d unplaced", shares, placed, s.Unplaced, want, total-want))
	}
	var withShare []string
	for _, c := range slices.Sorted(maps.Keys(shares)) {
		if shares[c] > 0 {
			withShare = append(withShare, c)
		}
	}
	if decided, err := splitDecided(ctx, clusters); err != nil || !slices.Equal(decided, withShare) {
		errs = append(errs, fmt.Errorf("the placement decides %v (%v), want the clusters with a share %v", decided, err, withShare))
	}
	delivered := map[string]v1alpha1.ClusterDelivery{}
	for _, d := range in.Status.Clusters {
		delivered[d.ClusterName] = d
	}
	for _, c := range splitClusters {
		ready, pending, all, err := splitPods(ctx, spokes[c.name])
		if err != nil {
			return nil, err
		}
		n := shares[c.name]
		if pending > 0 {
			errs = append(errs, fmt.Errorf("%s has %d pods waiting for a node", c.name, pending))
		}
		if int32(all) != n || int32(ready) != n {
			errs = append(errs, fmt.Errorf("%s runs %d pods, %d ready, want its share %d", c.name, all, ready, n))
		}
		if n == 0 {
			continue
		}
		d := delivered[c.name]
		if d.Replicas == nil || *d.Replicas != n || d.ReadyReplicas == nil || *d.ReadyReplicas != n {
			errs = append(errs, fmt.Errorf("status.clusters of %s: replicas %s, ready %s, want %d of %d", c.name, splitCount(d.Replicas), splitCount(d.ReadyReplicas), n, n))
		}
	}
	return shares, errors.Join(errs...)
}

func splitCount(n *int32) string {
	if n == nil {
		return "none"
	}
	return fmt.Sprint(*n)
}

// splitPods counts the workload's pods on a spoke: Running and Ready, waiting for a node
// (PodScheduled=False), and all that are not being deleted.
func splitPods(ctx context.Context, spoke *framework.ControlPlane) (ready, pending, all int, err error) {
	pods, err := spoke.AdminClient().CoreV1().Pods(splitNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + splitWorkload})
	if err != nil {
		return 0, 0, 0, err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		all++
		for _, c := range p.Status.Conditions {
			switch {
			case c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.Phase == corev1.PodRunning:
				ready++
			case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse:
				pending++
			}
		}
	}
	return ready, pending, all, nil
}

// splitDecided returns the clusters the placement's decisions name, sorted.
func splitDecided(ctx context.Context, clusters clusterclient.Interface) ([]string, error) {
	list, err := clusters.ClusterV1beta1().PlacementDecisions(splitNS).List(ctx, metav1.ListOptions{
		LabelSelector: clusterv1beta1.PlacementLabel + "=" + splitWorkload,
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

// splitStartSpoke starts one of the test's managed clusters (see startExtraSpoke) with its GPU
// nodes, registered on the hub in splitSet (the hub forgets it when the test ends), with
// delivery into splitNS granted, fleetfit-agent and OCM's work agent running, and waits until
// its agent reports every node Ready.
func splitStartSpoke(t *testing.T, c splitCluster) (*framework.ControlPlane, []*framework.Component) {
	t.Helper()
	ctx := t.Context()
	hub := fleet.Hub
	managed := clusterclient.NewForConfigOrDie(hub.AdminConfig()).ClusterV1().ManagedClusters()
	if _, err := managed.Create(ctx, ut.MakeCluster(c.name).Label("name", c.name).ClusterSet(splitSet).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := managed.Delete(context.Background(), c.name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ManagedCluster %s: %v", c.name, err)
		}
	})
	spoke, logs := startExtraSpoke(t, c.name, c.nodes())
	if err := framework.GrantDelivery(ctx, spoke, splitNS); err != nil {
		t.Fatal(err)
	}
	agent, err := framework.StartAgentProcess(ctx, hub, spoke, c.name, agentMinInterval)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Stop)
	work, err := framework.StartOCMWorkAgent(ctx, hub, spoke, c.name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(work.Stop)
	logs = append(logs, agent, work)
	waitSchedulable(t, spoke, c.nodes())
	inventories := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(c.name)
	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := inventories.Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got, want := inv.Status.ReadyNodeCount, int32(len(c.gpus)); got != want {
			return fmt.Errorf("inventory of %s shows %d ready nodes, want %d", c.name, got, want)
		}
		return nil
	})
	return spoke, logs
}

// splitDelete deletes the intent while the spokes still run, so that its ManifestWorks go
// and no finalizer keeps it, and then its Placement.
func splitDelete(t *testing.T, intents fleetfitv1alpha1.HPAIntentInterface, clusters clusterclient.Interface) {
	ctx := context.Background()
	if err := intents.Delete(ctx, splitWorkload, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting HPAIntent %s: %v", splitWorkload, err)
	}
	err := wait.PollUntilContextTimeout(ctx, framework.PollInterval, framework.EventuallyTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := intents.Get(ctx, splitWorkload, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the HPAIntent is still there %v after its deletion", framework.EventuallyTimeout)
	}
	if err := clusters.ClusterV1beta1().Placements(splitNS).Delete(ctx, splitWorkload, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting Placement %s: %v", splitWorkload, err)
	}
}

// splitDump shows, when the test failed, the intent's status, the decisions, the workload's
// pods on each spoke and the end of every process's log.
func splitDump(t *testing.T, intents fleetfitv1alpha1.HPAIntentInterface, clusters clusterclient.Interface,
	spokes map[string]*framework.ControlPlane, logs []*framework.Component) {
	if !t.Failed() {
		return
	}
	ctx := context.Background()
	if in, err := intents.Get(ctx, splitWorkload, metav1.GetOptions{}); err == nil {
		t.Logf("intent status: split %+v clusters %+v conditions %+v", in.Status.Split, in.Status.Clusters, in.Status.Conditions)
	}
	decided, err := splitDecided(ctx, clusters)
	t.Logf("decisions: %v (%v)", decided, err)
	for _, name := range slices.Sorted(maps.Keys(spokes)) {
		pods, err := spokes[name].AdminClient().CoreV1().Pods(splitNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		var lines []string
		for _, p := range pods.Items {
			lines = append(lines, fmt.Sprintf("%s on %q: %s", p.Name, p.Spec.NodeName, p.Status.Phase))
		}
		t.Logf("%s pods: %s", name, strings.Join(lines, "; "))
	}
	for _, c := range logs {
		t.Logf("--- %s ---\n%s", c.Name(), c.LogTail(splitLogLines))
	}
}
