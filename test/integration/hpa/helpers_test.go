package hpa

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/placement"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// agentMinInterval is how often at most each agent reports, so that a test's nodes show up on
// the hub quickly.
const agentMinInterval = 300 * time.Millisecond

// clusterSet is the set RegisterSpokes puts the spokes in; every test binds it.
const clusterSet = "default"

var (
	agentsOnce sync.Once
	agentsErr  error
)

// startAgents registers the spokes as managed clusters of the hub, creates their cluster set,
// and runs one fleetfit agent per spoke, reporting MachineGroups too, for the rest of the package. It runs once, on the
// first test that needs it.
func startAgents(t *testing.T) {
	t.Helper()
	agentsOnce.Do(func() {
		ctx := context.Background()
		if agentsErr = fleet.RegisterSpokes(ctx); agentsErr != nil {
			return
		}
		clusters := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
		_, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, utiltesting.MakeExclusiveClusterSet(clusterSet), metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			agentsErr = err
			return
		}
		for i, spoke := range fleet.Spokes {
			name := framework.SpokeName(i)
			if err := framework.ApplyAgentRBAC(ctx, fleet.Hub, spoke, name); err != nil {
				agentsErr = fmt.Errorf("agent RBAC of %s: %w", name, err)
				return
			}
			done, err := framework.StartAgent(ctx, fleet.Hub, spoke, name, agentMinInterval, framework.WithMachineGroups())
			if err != nil {
				agentsErr = fmt.Errorf("starting the agent of %s: %w", name, err)
				return
			}
			go func() {
				if err := <-done; err != nil {
					klog.Background().Error(err, "Agent stopped", "cluster", name)
				}
			}()
		}
	})
	if agentsErr != nil {
		t.Fatal(agentsErr)
	}
}

// cluster is the managed-cluster name of spoke i (0-based).
func cluster(i int) string { return framework.SpokeName(i) }

// expected is what a spoke's inventory must show before the test's hub starts.
type expected struct {
	nodes              int32
	allocatable, taken resource.Quantity // cpu
}

// env is one test's namespace, clients, nodes and hub.
type env struct {
	t          *testing.T
	ns         string
	clusters   clusterclient.Interface
	fleetfit   fleetfitclient.Interface
	spokes     map[int]*expected
	explainURL string
	podSeq     int
}

// newEnv starts the agents when needed and creates a namespace bound to the spokes' cluster
// set. At the test's end it deletes the namespace's intents, placements and decisions (no
// namespace controller runs on the hub), after the test's hub has stopped.
func newEnv(t *testing.T, name string) *env {
	t.Helper()
	startAgents(t)
	ctx := t.Context()
	cfg := fleet.Hub.AdminConfig()
	e := &env{
		t:        t,
		clusters: clusterclient.NewForConfigOrDie(cfg),
		fleetfit: fleetfitclient.NewForConfigOrDie(cfg),
		spokes:   map[int]*expected{},
	}
	ns, err := fleet.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.ns = ns.Name
	t.Cleanup(func() {
		ctx := context.Background()
		all := metav1.ListOptions{}
		_ = e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		_ = e.clusters.ClusterV1beta1().Placements(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		_ = e.clusters.ClusterV1beta1().PlacementDecisions(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	})
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSetBindings(e.ns).Create(ctx, utiltesting.MakeClusterSetBinding(e.ns, clusterSet), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) expect(spoke int) *expected {
	if e.spokes[spoke] == nil {
		e.spokes[spoke] = &expected{}
	}
	return e.spokes[spoke]
}

// addNodes creates Ready nodes on spoke i and deletes them when the test ends.
func (e *env) addNodes(spoke int, nodes ...*utiltesting.NodeWrapper) {
	e.t.Helper()
	client := fleet.Spokes[spoke].AdminClient()
	exp := e.expect(spoke)
	for _, w := range nodes {
		n := w.Obj()
		if err := framework.CreateNode(e.t.Context(), client, n); err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(func() {
			if err := client.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}); err != nil {
				e.t.Errorf("deleting node %s of %s: %v", n.Name, cluster(spoke), err)
			}
		})
		exp.nodes++
		exp.allocatable.Add(n.Status.Allocatable[corev1.ResourceCPU])
	}
}

// addPod binds a pod requesting requests to node on spoke i, as if it ran there, and deletes
// it when the test ends.
func (e *env) addPod(spoke int, node string, requests corev1.ResourceList) {
	e.t.Helper()
	e.podSeq++
	pod := utiltesting.MakePod(metav1.NamespaceDefault, fmt.Sprintf("%s-%d", node, e.podSeq), node, requests)
	pods := fleet.Spokes[spoke].AdminClient().CoreV1().Pods(metav1.NamespaceDefault)
	if _, err := pods.Create(e.t.Context(), pod, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		// No kubelet confirms the deletion: remove the pod at once.
		if err := pods.Delete(context.Background(), pod.Name, *metav1.NewDeleteOptions(0)); err != nil {
			e.t.Errorf("deleting pod %s of %s: %v", pod.Name, cluster(spoke), err)
		}
	})
	e.expect(spoke).taken.Add(requests[corev1.ResourceCPU])
}

// waitInventories waits until the ClusterInventory of every spoke the test put nodes on shows
// exactly those nodes and pods: the number of nodes, their allocatable cpu and the cpu their
// pods request. Earlier tests' nodes are gone from it then.
func (e *env) waitInventories() {
	e.t.Helper()
	for spoke, exp := range e.spokes {
		name := cluster(spoke)
		e.eventually(func(ctx context.Context) error {
			inv, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(name).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			st := inv.Status
			var alloc, taken resource.Quantity
			for _, r := range st.Resources {
				if r.Name == corev1.ResourceCPU {
					alloc, taken = r.Allocatable, r.Requested
				}
			}
			if st.NodeCount != exp.nodes || st.ReadyNodeCount != exp.nodes || alloc.Cmp(exp.allocatable) != 0 || taken.Cmp(exp.taken) != 0 {
				return fmt.Errorf("inventory of %s: %d nodes (%d ready), cpu allocatable %s requested %s; want %d nodes, cpu allocatable %s requested %s",
					name, st.NodeCount, st.ReadyNodeCount, alloc.String(), taken.String(), exp.nodes, exp.allocatable.String(), exp.taken.String())
			}
			return nil
		})
	}
}

// startHub waits for the inventories and runs fleetfit-hub in-process until the test ends.
// With explain, it also serves explain on a loopback port (see explain).
func (e *env) startHub(explain bool, args ...string) {
	e.t.Helper()
	e.waitInventories()
	if explain {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			e.t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		args = append(args, "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port), "--cert-dir", filepath.Join(e.t.TempDir(), "certs"))
		e.explainURL = fmt.Sprintf("https://127.0.0.1:%d%s", port, placement.DebugPath)
	}
	framework.RunHub(e.t, fleet.Hub.AdminConfig(), args...)
}

// explain asks the hub's explain endpoint, as the hub's admin, why each cluster was or was not
// chosen for a placement, and returns the verdicts by cluster once they satisfy ok.
func (e *env) explain(name string, ok func(verdicts map[string]string) error) map[string]string {
	e.t.Helper()
	cfg := fleet.Hub.AdminConfig()
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		e.t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true, //nolint:gosec // the hub's certificate is self-signed here
	}}}
	var verdicts map[string]string
	e.eventually(func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.explainURL+e.ns+"/"+name, nil)
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
		verdicts = map[string]string{}
		for _, v := range got.Clusters {
			verdicts[v.Name] = v.RejectedBy + ": " + v.Reason
			if v.Selected {
				verdicts[v.Name] = "selected"
			}
		}
		return ok(verdicts)
	})
	return verdicts
}

// onClusters is a placement restricted to the named clusters by their name label.
func onClusters(name string, clusters ...string) *utiltesting.PlacementWrapper {
	return utiltesting.MakePlacement(name, "").Predicate(clusterv1beta1.ClusterSelector{LabelSelector: metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "name", Operator: metav1.LabelSelectorOpIn, Values: clusters}},
	}})
}

// createPlacement creates a placement in the env's namespace.
func (e *env) createPlacement(w *utiltesting.PlacementWrapper) {
	e.t.Helper()
	p := w.Clone().Obj()
	p.Namespace = e.ns
	if _, err := e.clusters.ClusterV1beta1().Placements(e.ns).Create(e.t.Context(), p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// createIntent creates an intent in the env's namespace.
func (e *env) createIntent(w *utiltesting.HPAIntentWrapper) {
	e.t.Helper()
	in := w.Obj()
	in.Namespace = e.ns
	if _, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Create(e.t.Context(), in, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// updateIntent changes an intent's spec, retrying on conflicts with the hub's status writes.
func (e *env) updateIntent(name string, mutate func(*v1alpha1.HPAIntent)) {
	e.t.Helper()
	intents := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		in, err := intents.Get(e.t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(in)
		_, err = intents.Update(e.t.Context(), in, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// decided returns the clusters in a placement's decisions, sorted.
func (e *env) decided(ctx context.Context, name string) ([]string, error) {
	list, err := e.clusters.ClusterV1beta1().PlacementDecisions(e.ns).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: name}).String(),
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

// eventually is framework.Eventually for the env's test. When the timeout cuts the last
// attempt short, it reports the last error that attempt did not cause.
func (e *env) eventually(fn func(ctx context.Context) error) {
	e.t.Helper()
	eventually(e.t, fn)
}

func eventually(t *testing.T, fn func(ctx context.Context) error) {
	t.Helper()
	var last error
	var mu sync.Mutex
	defer func() {
		if t.Failed() {
			mu.Lock()
			defer mu.Unlock()
			t.Logf("last error before the timeout: %v", last)
		}
	}()
	framework.Eventually(t, func(ctx context.Context) error {
		err := fn(ctx)
		if err != nil && ctx.Err() == nil && !strings.Contains(err.Error(), "rate limiter") {
			mu.Lock()
			last = err
			mu.Unlock()
		}
		return err
	})
}

// waitDecided waits until the placement decides exactly the clusters want (in any order).
func (e *env) waitDecided(name string, want ...string) {
	e.t.Helper()
	want = slices.Sorted(slices.Values(want))
	e.eventually(func(ctx context.Context) error {
		got, err := e.decided(ctx, name)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("placement %s decides %v, want %v", name, got, want)
		}
		return nil
	})
}

// waitIntent returns the intent once check accepts it.
func (e *env) waitIntent(name string, check func(*v1alpha1.HPAIntent) error) *v1alpha1.HPAIntent {
	e.t.Helper()
	var in *v1alpha1.HPAIntent
	e.eventually(func(ctx context.Context) error {
		var err error
		if in, err = e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err
		}
		return check(in)
	})
	return in
}

// hasCondition checks a condition of the intent's current generation.
func hasCondition(condType string, status metav1.ConditionStatus, reason string) func(*v1alpha1.HPAIntent) error {
	return func(in *v1alpha1.HPAIntent) error {
		c := meta.FindStatusCondition(in.Status.Conditions, condType)
		switch {
		case c == nil:
			return fmt.Errorf("HPAIntent %s has no %s condition yet", in.Name, condType)
		case c.ObservedGeneration != in.Generation:
			return fmt.Errorf("HPAIntent %s: %s is for generation %d, the intent is at %d", in.Name, condType, c.ObservedGeneration, in.Generation)
		case c.Status != status || (reason != "" && c.Reason != reason):
			return fmt.Errorf("HPAIntent %s: %s is %s/%s (%s), want %s/%s", in.Name, condType, c.Status, c.Reason, c.Message, status, reason)
		}
		return nil
	}
}

// and combines intent checks.
func and(checks ...func(*v1alpha1.HPAIntent) error) func(*v1alpha1.HPAIntent) error {
	return func(in *v1alpha1.HPAIntent) error {
		for _, c := range checks {
			if err := c(in); err != nil {
				return err
			}
		}
		return nil
	}
}

// hasCandidates checks the intent's candidates, consumer by consumer.
func hasCandidates(want ...v1alpha1.ConsumerCandidates) func(*v1alpha1.HPAIntent) error {
	return func(in *v1alpha1.HPAIntent) error {
		if diff := cmp.Diff(want, in.Status.Candidates); diff != "" {
			return fmt.Errorf("HPAIntent %s candidates (-want,+got):\n%s", in.Name, diff)
		}
		return nil
	}
}

// allow and deny are candidate lists.
func allow(consumer string, replicas int32, clusters ...string) v1alpha1.ConsumerCandidates {
	return v1alpha1.ConsumerCandidates{Consumer: consumer, Replicas: replicas, Mode: v1alpha1.CandidateAllow, Clusters: clusters}
}

func deny(consumer string, replicas int32, clusters ...string) v1alpha1.ConsumerCandidates {
	return v1alpha1.ConsumerCandidates{Consumer: consumer, Replicas: replicas, Mode: v1alpha1.CandidateDeny, Clusters: clusters}
}

// scheduledMessage returns the message of the intent's Scheduled condition.
func scheduledMessage(in *v1alpha1.HPAIntent) string {
	if c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionScheduled); c != nil {
		return c.Message
	}
	return ""
}

// node starts a node builder with cpu and memory.
func node(name, cpu, memory string) *utiltesting.NodeWrapper {
	return utiltesting.MakeNode(name).Resource(corev1.ResourceCPU, cpu).Resource(corev1.ResourceMemory, memory)
}

// cpu is a resource list of cpu.
func cpu(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}
}
