package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/typed/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// The scale-up test has two managed clusters of its own, in a cluster set of its own: scaleup-a
// with CPU nodes only, and scaleup-b with CPU nodes and Karpenter's kwok provider, whose
// NodePool gpu may launch GPU nodes up to 4 GPUs in all.
const (
	suNS       = "scaleup-e2e"
	suSet      = "scaleup-e2e"
	suA        = "scaleup-a"
	suB        = "scaleup-b"
	suPool     = "gpu"
	suFirst    = "train-1"
	suSecond   = "train-2"
	suGPULimit = "4"
	// suNodeClass is the KWOKNodeClass the pool launches with.
	suNodeClass = "default"
	// suLogLines is how much of each process's log a failure shows.
	suLogLines = 40
)

var (
	suNodePools   = schema.GroupVersionResource{Group: framework.KarpenterGroup, Version: framework.KarpenterVersion, Resource: "nodepools"}
	suNodeClaims  = schema.GroupVersionResource{Group: framework.KarpenterGroup, Version: framework.KarpenterVersion, Resource: "nodeclaims"}
	suNodeClasses = schema.GroupVersionResource{Group: framework.KarpenterKwokGroup, Version: framework.KarpenterKwokVersion, Resource: "kwoknodeclasses"}
)

// suCPUNodes are each cluster's nodes of its own: CPU only, with room to spare.
func suCPUNodes() []*corev1.Node { return []*corev1.Node{cpuNode("cpu-0"), cpuNode("cpu-1")} }

// suNodePool is scaleup-b's NodePool: the GPU instance types of the provider, on demand,
// untainted (a pod asking for GPUs needs no toleration), at most 4 GPUs in all, and never
// disrupted while the test runs.
func suNodePool() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": framework.KarpenterGroup + "/" + framework.KarpenterVersion,
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": suPool},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"fleetfit.io/pool": suPool}},
				"spec": map[string]any{
					"nodeClassRef": map[string]any{"group": framework.KarpenterKwokGroup, "kind": framework.KarpenterNodeClassKind, "name": suNodeClass},
					"requirements": []any{
						map[string]any{"key": corev1.LabelInstanceTypeStable, "operator": "In", "values": []any{"gpu-4x", "gpu-8x"}},
						map[string]any{"key": framework.KarpenterCapacityTypeKey, "operator": "In", "values": []any{framework.KarpenterOnDemand}},
					},
					"expireAfter": "Never",
				},
			},
			"limits":     map[string]any{string(gpu): suGPULimit},
			"disruption": map[string]any{"consolidationPolicy": "WhenEmpty", "consolidateAfter": "Never"},
		},
	}}
}

// suInstanceTypes is the agent's ConfigMap on scaleup-b: the instance types the provider
// launches, in the {name, resources} form of Karpenter's kwok provider.
func suInstanceTypes(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	type entry struct {
		Name      string              `json:"name"`
		Resources corev1.ResourceList `json:"resources"`
	}
	var entries []entry
	for _, it := range framework.KarpenterInstanceTypes() {
		entries = append(entries, entry{Name: it.Name, Resources: it.Resources})
	}
	raw, err := json.Marshal(entries)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: reporter.DefaultInstanceTypesConfigMap, Namespace: "fleetfit-agent"},
		Data:       map[string]string{reporter.InstanceTypesKey: string(raw)},
	}
}

// suDeployment is one replica of a trainer; the intent adds its cores, memory and GPUs.
func suDeployment(name string) *appsv1.Deployment {
	l := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: l},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: l},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "train", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

// suIntent needs 4 GPUs on one node for the one replica of name's Deployment, placed by its
// own Placement of one cluster.
func suIntent(name string, policy v1alpha1.ScaleUpPolicy) *v1alpha1.HPAIntent {
	in := ut.MakeHPAIntent(name, suNS).Placement(name).Consumer(
		ut.MakeConsumer("train").Target("Deployment", name, "train").Requirement(
			ut.MakeResource("cpu", "cpu").Requests("1").Obj(),
			ut.MakeResource("memory", "memory").Requests("1Gi").Limits("1Gi").Obj(),
			ut.MakeResource("gpu", string(gpu)).Limits("4").Obj(),
		).Obj(),
	).Manifest(suDeployment(name)).Obj()
	if policy != "" {
		in.Spec.ScaleUp = &v1alpha1.ScaleUp{Policy: policy}
	}
	return in
}

// TestScaleUpOnAClusterThatGrows follows, on real processes (kube-scheduler, kwok, Karpenter's
// kwok provider, OCM's work agent and fleetfit-agent on two managed clusters of the test's
// own, fleetfit-hub), an intent needing 4 GPUs on one node where no cluster has a GPU:
// scaleup-a has CPU nodes only, scaleup-b too but also a Karpenter NodePool gpu that may
// launch gpu-4x and gpu-8x nodes up to 4 GPUs in all, and the agent's ConfigMap of the
// provider's instance types.
//
// scaleup-b's agent reports the pool with the shapes it can add (1 gpu-4x). With
// scaleUp.policy Never no cluster fits, and the intent's Scheduled condition says why of
// each. With the default policy, scaleup-a is still never (explain says why) and scaleup-b is
// chosen: the condition says it fits after scale-up with 1 node of gpu-4x from NodePool gpu.
// The workload is delivered there, Karpenter launches a gpu-4x node, the pod Runs on it, and
// the hub's inventory of scaleup-b shows the node and the pool at its limit. A second such
// intent is then never on scaleup-b, whose pool can add nothing more: its condition says so.
func TestScaleUpOnAClusterThatGrows(t *testing.T) {
	framework.SkipWithoutKarpenter(t)
	start := time.Now()
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	hubFleetfit := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1()
	intents := hubFleetfit.HPAIntents(suNS)
	var logs []*framework.Component
	spokes := map[string]*framework.ControlPlane{}

	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: suNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet(suSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(suNS).Create(ctx, ut.MakeClusterSetBinding(suNS, suSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	// scaleup-a: CPU nodes, no pool.
	spokeA, l := suStartSpoke(t, suA, nil)
	spokes[suA] = spokeA
	logs = append(logs, l...)

	// scaleup-b: CPU nodes, Karpenter and its pool, and the agent's ConfigMap, all there
	// before the agent starts: it looks Karpenter's API up once.
	var dynB dynamic.Interface
	spokeB, l := suStartSpoke(t, suB, func(spoke *framework.ControlPlane) {
		framework.StartKarpenter(t, spoke, framework.KarpenterOptions{})
		dynB = dynamic.NewForConfigOrDie(spoke.AdminConfig())
		class := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": framework.KarpenterKwokGroup + "/" + framework.KarpenterKwokVersion,
			"kind":       framework.KarpenterNodeClassKind,
			"metadata":   map[string]any{"name": suNodeClass},
		}}
		if _, err := dynB.Resource(suNodeClasses).Create(ctx, class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := dynB.Resource(suNodePools).Create(ctx, suNodePool(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := spoke.AdminClient().CoreV1().ConfigMaps("fleetfit-agent").Create(ctx, suInstanceTypes(t), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	spokes[suB] = spokeB
	logs = append(logs, l...)
	t.Logf("two spokes, Karpenter and the agents up in %v", time.Since(start).Round(100*time.Millisecond))

	// scaleup-b's agent reports the ready pool: 1 gpu-4x within its limit, no gpu-8x.
	inventoriesB := hubFleetfit.ClusterInventories(suB)
	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := inventoriesB.Get(ctx, suB, metav1.GetOptions{})
		if err != nil {
			return err
		}
		return suPoolRoom(&inv.Status, map[string]int32{"gpu-4x": 1, "gpu-8x": 0})
	})

	hubProcess, err := framework.StartHubProcess(ctx, hub, "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hubProcess.Stop)
	logs = append(logs, hubProcess)
	// Cleanups run last first: the dump while everything runs, then the intents' deletion
	// while the work agents can still remove what they applied, then the processes stop.
	t.Cleanup(func() { suDelete(t, intents, clusters) })
	t.Cleanup(func() { suDump(t, intents, clusters, spokes, dynB, logs) })

	// The first intent may not wait for a scale-up: no cluster fits now, and the condition
	// says why of each.
	suCreate(t, clusters, intents, suIntent(suFirst, v1alpha1.ScaleUpNever))
	cond := suCondition(t, intents, suFirst, "no cluster fits now", func(c *metav1.Condition) error {
		if c.Status != metav1.ConditionFalse || c.Reason != "NoFeasibleCluster" {
			return fmt.Errorf("Scheduled is %s (%s), want False (NoFeasibleCluster)", c.Status, c.Reason)
		}
		if strings.Contains(c.Message, "NodePool") {
			return fmt.Errorf("Scheduled says %q: an intent that may not wait hears nothing of pools", c.Message)
		}
		return suReasons(c.Message, map[string]string{
			suA: "no schedulable node has 4 nvidia.com/gpu free",
			suB: "no schedulable node has 4 nvidia.com/gpu free",
		})
	})
	t.Logf("with scaleUp.policy Never: %s", cond.Message)
	if claims, err := dynB.Resource(suNodeClaims).List(ctx, metav1.ListOptions{}); err != nil || len(claims.Items) != 0 {
		t.Errorf("NodeClaims on %s before anything was delivered: %d (%v)", suB, len(claims.Items), err)
	}

	// The default policy: scaleup-a is never, scaleup-b fits after a scale-up.
	framework.Eventually(t, func(ctx context.Context) error {
		in, err := intents.Get(ctx, suFirst, metav1.GetOptions{})
		if err != nil {
			return err
		}
		in.Spec.ScaleUp = nil
		_, err = intents.Update(ctx, in, metav1.UpdateOptions{})
		return err
	})
	scheduled := time.Now()
	wantNote := "fits after scale-up: 1 node of gpu-4x from NodePool " + suPool
	cond = suCondition(t, intents, suFirst, "scaleup-b chosen for a scale-up", func(c *metav1.Condition) error {
		if c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Scheduled is %s (%s): %s", c.Status, c.Reason, c.Message)
		}
		if !strings.Contains(c.Message, "decides 1 cluster(s): "+suB) || !strings.Contains(c.Message, suB+" "+wantNote) {
			return fmt.Errorf("Scheduled says %q, want %s decided and %q", c.Message, suB, suB+" "+wantNote)
		}
		return nil
	})
	t.Logf("with the default policy: %s", cond.Message)
	in, err := intents.Get(ctx, suFirst, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cc := range in.Status.Candidates {
		if cc.Mode != v1alpha1.CandidateAllow || !slices.Equal(cc.Clusters, []string{suB}) {
			t.Errorf("candidates of consumer %s: %s %v, want only %s allowed", cc.Consumer, cc.Mode, cc.Clusters, suB)
		}
	}
	// Explain, asked once the decision is made, finds scaleup-b decided (and so notes no
	// scale-up: that is for a newly decided cluster) and scaleup-a never.
	verdicts := suExplain(t, hubProcess, suFirst, func(v map[string]placementVerdict) error {
		a, b := v[suA], v[suB]
		if a.Selected || a.RejectedBy != "HardwareFit" || !strings.Contains(a.Reason, "no schedulable node has 4 nvidia.com/gpu free") ||
			strings.Contains(a.Reason, "NodePool") {
			return fmt.Errorf("%s: %+v, want rejected by HardwareFit for want of GPUs, with no pool to add them", suA, a)
		}
		if !b.Selected {
			return fmt.Errorf("%s: %+v, want selected", suB, b)
		}
		return nil
	})
	t.Logf("explain: %s: rejected by %s: %s; %s: selected", suA, verdicts[suA].RejectedBy, verdicts[suA].Reason, suB)

	// Delivered: Karpenter launches a gpu-4x node of the pool, and the pod Runs on it.
	var node *corev1.Node
	rsEventually(t, 3*framework.EventuallyTimeout, "the trainer Running on a node Karpenter launched", func(ctx context.Context) error {
		pods, err := spokeB.AdminClient().CoreV1().Pods(suNS).List(ctx, metav1.ListOptions{LabelSelector: "app=" + suFirst})
		if err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d pods of %s on %s, want 1", len(pods.Items), suFirst, suB)
		}
		p := &pods.Items[0]
		if p.Status.Phase != corev1.PodRunning || p.Spec.NodeName == "" {
			return fmt.Errorf("pod %s is %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		}
		if q := p.Spec.Containers[0].Resources.Requests[gpu]; q.Cmp(resource.MustParse("4")) != 0 {
			return fmt.Errorf("pod %s requests %s GPUs, want 4", p.Name, q.String())
		}
		n, err := spokeB.AdminClient().CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if n.Labels[inventory.LabelKarpenterNodePool] != suPool || n.Labels[corev1.LabelInstanceTypeStable] != "gpu-4x" {
			return fmt.Errorf("pod %s runs on %s, labelled %v, want a gpu-4x node of NodePool %s", p.Name, n.Name, n.Labels, suPool)
		}
		node = n
		return nil
	})
	t.Logf("pod Running on Karpenter's node %s %v after the decision", node.Name, time.Since(scheduled).Round(100*time.Millisecond))
	if pods, err := spokeA.AdminClient().CoreV1().Pods(suNS).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Errorf("%d pods on %s, want none (%v)", len(pods.Items), suA, err)
	}

	// The hub's inventory of scaleup-b shows the new node, its GPUs taken, and the pool at
	// its limit; the intent shows its replica ready there.
	cpuNodes := int32(len(suCPUNodes()))
	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := inventoriesB.Get(ctx, suB, metav1.GetOptions{})
		if err != nil {
			return err
		}
		st := &inv.Status
		if st.ReadyNodeCount != cpuNodes+1 {
			return fmt.Errorf("inventory of %s shows %d ready nodes, want %d", suB, st.ReadyNodeCount, cpuNodes+1)
		}
		i := slices.IndexFunc(st.Resources, func(r v1alpha1.ResourceTotals) bool { return r.Name == gpu })
		if i < 0 {
			return fmt.Errorf("inventory of %s shows no GPU, want the new node's 4", suB)
		}
		if r := st.Resources[i]; r.Allocatable.Cmp(resource.MustParse("4")) != 0 || !r.Free.IsZero() {
			return fmt.Errorf("inventory of %s shows %s GPUs, %s free, want the new node's 4, all taken", suB, r.Allocatable.String(), r.Free.String())
		}
		if err := suPoolRoom(st, map[string]int32{"gpu-4x": 0, "gpu-8x": 0}); err != nil {
			return err
		}
		if u := st.NodePools[0].Usage[gpu]; u.Cmp(resource.MustParse(suGPULimit)) != 0 {
			return fmt.Errorf("NodePool %s uses %s GPUs, want %s", suPool, u.String(), suGPULimit)
		}
		in, err := intents.Get(ctx, suFirst, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(in.Status.Clusters) != 1 || in.Status.Clusters[0].ClusterName != suB || in.Status.Clusters[0].ReadyReplicas == nil || *in.Status.Clusters[0].ReadyReplicas != 1 {
			return fmt.Errorf("status.clusters %+v, want the replica ready on %s", in.Status.Clusters, suB)
		}
		return nil
	})

	// The pool is at its limit: a second intent needing 4 GPUs is never on scaleup-b.
	suCreate(t, clusters, intents, suIntent(suSecond, ""))
	cond = suCondition(t, intents, suSecond, "no cluster for the second intent", func(c *metav1.Condition) error {
		if c.Status != metav1.ConditionFalse || c.Reason != "NoFeasibleCluster" {
			return fmt.Errorf("Scheduled is %s (%s): %s, want False (NoFeasibleCluster)", c.Status, c.Reason, c.Message)
		}
		if n := strings.Count(c.Message, "NodePool"); n != 1 {
			return fmt.Errorf("Scheduled says %q, want a NodePool named for %s only, which has one", c.Message, suB)
		}
		return suReasons(c.Message, map[string]string{
			suA: "no schedulable node has 4 nvidia.com/gpu free",
			suB: "no NodePool of the cluster can add the nodes it needs within its limits",
		})
	})
	t.Logf("the second intent: %s", cond.Message)
	framework.Consistently(t, 5*time.Second, func(ctx context.Context) error {
		claims, err := dynB.Resource(suNodeClaims).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(claims.Items) != 1 {
			return fmt.Errorf("%d NodeClaims on %s with the pool at its limit, want 1", len(claims.Items), suB)
		}
		return nil
	})
	t.Logf("whole test: %v", time.Since(start).Round(100*time.Millisecond))
}

// suCreate creates the intent and its Placement of one cluster of suSet.
func suCreate(t *testing.T, clusters clusterclient.Interface, intents fleetfitv1alpha1.HPAIntentInterface, in *v1alpha1.HPAIntent) {
	t.Helper()
	p := ut.MakePlacement(in.Spec.PlacementRef.Name, suNS).NumberOfClusters(1).ClusterSets(suSet).
		Mode(clusterv1beta1.PrioritizerPolicyModeExact).BuiltIn("Steady", 1).BuiltIn("HardwareFit", 1).Obj()
	if _, err := clusters.ClusterV1beta1().Placements(suNS).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := intents.Create(t.Context(), in, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// suPoolRoom checks that the inventory reports the ready pool gpu with shapes from the
// ConfigMap, and how many nodes of each shape it can add.
func suPoolRoom(st *v1alpha1.ClusterInventoryStatus, want map[string]int32) error {
	if len(st.NodePools) != 1 {
		return fmt.Errorf("inventory reports %d node pools, want %s: %+v", len(st.NodePools), suPool, st.NodePools)
	}
	p := &st.NodePools[0]
	if p.Name != suPool || p.Provider != reporter.ProviderKarpenter || !p.Ready || p.ShapesFrom != v1alpha1.ShapesFromConfigMap {
		return fmt.Errorf("node pool %s: provider %q, ready %v, shapes from %q (%s), want a ready karpenter pool with shapes from the ConfigMap", p.Name, p.Provider, p.Ready, p.ShapesFrom, p.Message)
	}
	got := map[string]int32{}
	for _, s := range p.Shapes {
		got[s.Name] = s.MaxNodes
	}
	if len(got) != len(want) {
		return fmt.Errorf("node pool %s can add %v, want %v", p.Name, got, want)
	}
	for name, n := range want {
		if m, ok := got[name]; !ok || m != n {
			return fmt.Errorf("node pool %s can add %v, want %v", p.Name, got, want)
		}
	}
	return nil
}

// suCondition waits until the intent's Scheduled condition passes ok, and returns it.
func suCondition(t *testing.T, intents fleetfitv1alpha1.HPAIntentInterface, name, what string, ok func(*metav1.Condition) error) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	rsEventually(t, framework.EventuallyTimeout, what, func(ctx context.Context) error {
		in, err := intents.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionScheduled)
		if c == nil {
			return fmt.Errorf("intent %s has no Scheduled condition", name)
		}
		if c.ObservedGeneration != in.Generation {
			return fmt.Errorf("Scheduled condition of generation %d, the intent's is %d", c.ObservedGeneration, in.Generation)
		}
		got = *c
		return ok(c)
	})
	return got
}

// suReasons checks that a NoFeasibleCluster message gives, for each cluster, a reason that
// contains the text wanted. The reasons are "cluster: reason", separated by "; ", and a
// reason may contain "; " itself: a cluster's reason runs up to the next cluster's name.
func suReasons(msg string, want map[string]string) error {
	var errs []error
	for cluster, text := range want {
		i := strings.Index(msg, cluster+": ")
		if i < 0 {
			errs = append(errs, fmt.Errorf("no reason for %s in %q", cluster, msg))
			continue
		}
		reason := msg[i+len(cluster)+2:]
		for other := range want {
			if j := strings.Index(reason, "; "+other+": "); other != cluster && j >= 0 {
				reason = reason[:j]
			}
		}
		if !strings.Contains(reason, text) {
			errs = append(errs, fmt.Errorf("the reason for %s is %q, want it to say %q", cluster, reason, text))
		}
	}
	return errors.Join(errs...)
}

// placementVerdict is what explain says of one cluster.
type placementVerdict struct {
	RejectedBy, Reason, Note string
	Selected                 bool
}

// suExplain asks the hub's explain endpoint, as the hub's admin, what it made of each cluster
// for the placement, until ok accepts the verdicts, which it returns.
func suExplain(t *testing.T, hub *framework.Component, name string, ok func(map[string]placementVerdict) error) map[string]placementVerdict {
	t.Helper()
	cfg := fleet.Hub.AdminConfig()
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true, //nolint:gosec // the hub's certificate is self-signed here
	}}}
	url := "https://" + hub.Addr() + placement.DebugPath + suNS + "/" + name
	var verdicts map[string]placementVerdict
	rsEventually(t, framework.EventuallyTimeout, "explain of "+name, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("explain %s: status %d: %s", name, resp.StatusCode, body)
		}
		var got placement.DebugResult
		if err := json.Unmarshal(body, &got); err != nil {
			return fmt.Errorf("decoding %q: %w", body, err)
		}
		verdicts = map[string]placementVerdict{}
		for _, v := range got.Clusters {
			verdicts[v.Name] = placementVerdict{RejectedBy: v.RejectedBy, Reason: v.Reason, Note: v.Note, Selected: v.Selected}
		}
		return ok(verdicts)
	})
	return verdicts
}

// suStartSpoke starts one of the test's managed clusters (see startExtraSpoke) with
// suCPUNodes, registered on the hub in suSet (the hub forgets it when the test ends), with
// delivery into suNS granted; before, when given, prepares the spoke before its agents start.
// It then starts fleetfit-agent and OCM's work agent, and waits until the agent reports every
// node Ready.
func suStartSpoke(t *testing.T, name string, before func(*framework.ControlPlane)) (*framework.ControlPlane, []*framework.Component) {
	t.Helper()
	ctx := t.Context()
	hub := fleet.Hub
	managed := clusterclient.NewForConfigOrDie(hub.AdminConfig()).ClusterV1().ManagedClusters()
	if _, err := managed.Create(ctx, ut.MakeCluster(name).Label("name", name).ClusterSet(suSet).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := managed.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting ManagedCluster %s: %v", name, err)
		}
	})
	nodes := suCPUNodes()
	spoke, logs := startExtraSpoke(t, name, nodes)
	if err := framework.GrantDelivery(ctx, spoke, suNS); err != nil {
		t.Fatal(err)
	}
	if before != nil {
		before(spoke)
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
	waitSchedulable(t, spoke, nodes)
	inventories := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(name)
	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := inventories.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got, want := inv.Status.ReadyNodeCount, int32(len(nodes)); got != want {
			return fmt.Errorf("inventory of %s shows %d ready nodes, want %d", name, got, want)
		}
		return nil
	})
	return spoke, logs
}

// suDelete deletes the intents while the spokes still run, so that their ManifestWorks go
// and no finalizer keeps them, and then their Placements.
func suDelete(t *testing.T, intents fleetfitv1alpha1.HPAIntentInterface, clusters clusterclient.Interface) {
	ctx := context.Background()
	for _, name := range []string{suFirst, suSecond} {
		if err := intents.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting HPAIntent %s: %v", name, err)
		}
	}
	for _, name := range []string{suFirst, suSecond} {
		err := wait.PollUntilContextTimeout(ctx, framework.PollInterval, framework.EventuallyTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := intents.Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("the HPAIntent %s is still there %v after its deletion", name, framework.EventuallyTimeout)
		}
		if err := clusters.ClusterV1beta1().Placements(suNS).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Placement %s: %v", name, err)
		}
	}
}

// suDump shows, when the test failed, the intents' status, the decisions, the inventories'
// node pools, the workload's pods and nodes on each spoke, scaleup-b's NodePools and
// NodeClaims, and the end of every process's log.
func suDump(t *testing.T, intents fleetfitv1alpha1.HPAIntentInterface, clusters clusterclient.Interface,
	spokes map[string]*framework.ControlPlane, dyn dynamic.Interface, logs []*framework.Component) {
	if !t.Failed() {
		return
	}
	ctx := context.Background()
	for _, name := range []string{suFirst, suSecond} {
		if in, err := intents.Get(ctx, name, metav1.GetOptions{}); err == nil {
			t.Logf("intent %s status: candidates %+v clusters %+v conditions %+v", name, in.Status.Candidates, in.Status.Clusters, in.Status.Conditions)
		}
		if list, err := clusters.ClusterV1beta1().PlacementDecisions(suNS).List(ctx, metav1.ListOptions{LabelSelector: clusterv1beta1.PlacementLabel + "=" + name}); err == nil {
			for _, d := range list.Items {
				t.Logf("decisions of %s: %+v", name, d.Status.Decisions)
			}
		}
	}
	invs := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig()).FleetfitV1alpha1()
	for _, name := range []string{suA, suB} {
		if inv, err := invs.ClusterInventories(name).Get(ctx, name, metav1.GetOptions{}); err == nil {
			raw, _ := json.Marshal(inv.Status.NodePools)
			t.Logf("inventory of %s: revision %d, %d ready nodes, shapes %d, node pools %s", name, inv.Status.Revision, inv.Status.ReadyNodeCount, inv.Status.ShapeCount, raw)
		}
		spoke := spokes[name]
		if spoke == nil {
			continue
		}
		if pods, err := spoke.AdminClient().CoreV1().Pods(suNS).List(ctx, metav1.ListOptions{}); err == nil {
			for _, p := range pods.Items {
				t.Logf("%s: pod %s on %q: %s %+v", name, p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
			}
		}
		if nodes, err := spoke.AdminClient().CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
			for _, n := range nodes.Items {
				t.Logf("%s: node %s labels %v taints %v allocatable %v", name, n.Name, n.Labels, n.Spec.Taints, n.Status.Allocatable)
			}
		}
	}
	if dyn != nil {
		for _, gvr := range []schema.GroupVersionResource{suNodePools, suNodeClaims} {
			list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Logf("listing %s: %v", gvr.Resource, err)
				continue
			}
			for _, o := range list.Items {
				t.Logf("%s %s: status %v", gvr.Resource, o.GetName(), o.Object["status"])
			}
		}
	}
	for _, c := range logs {
		t.Logf("--- %s ---\n%s", c.Name(), c.LogTail(suLogLines))
	}
}
