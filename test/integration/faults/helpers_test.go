package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// Named timeouts and sizes, for a loaded 2-core machine.
const (
	// agentMinInterval is how often at most an agent reports, so that changes show on the hub
	// quickly.
	agentMinInterval = 300 * time.Millisecond
	// convergeTimeout bounds how long a hub (or its successor) may take to decide and deliver
	// a burst after it starts.
	convergeTimeout = 2 * time.Minute
	// settle is how long a converged state must stay unchanged before it counts.
	settle = 3 * time.Second
	// clusterSet is the set RegisterSpokes puts the spokes in.
	clusterSet = "default"
	// staleMetric counts the clusters whose inventory the hub takes for stale.
	staleMetric = "fleetfit_stale_inventories"
	// logLines is how much of each process's log a failed test prints.
	logLines = 40
)

// nodes are each spoke's nodes: two of 8 cpu, so that a 3-cpu replica fits twice on a node
// and four times on a cluster, while the cluster's 16 cpu would suggest five.
var nodes = []struct {
	name        string
	cpu, memory string
}{{"node-0", "8", "32Gi"}, {"node-1", "8", "32Gi"}}

// markerNode is the node that carries each test's marker pod (see startAgents).
const markerNode = "node-0"

var (
	setUpOnce sync.Once
	setUpErr  error
	// markerSeq makes each marker pod request a different amount, see startAgents.
	markerSeq atomic.Int64
)

// setUpFleet registers the spokes, creates the cluster set, applies the agents' RBAC and
// creates the nodes, once for the package.
func setUpFleet(t *testing.T) {
	t.Helper()
	setUpOnce.Do(func() {
		ctx := context.Background()
		if setUpErr = fleet.RegisterSpokes(ctx); setUpErr != nil {
			return
		}
		clusters := clusterclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
		if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet(clusterSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			setUpErr = err
			return
		}
		for i, spoke := range fleet.Spokes {
			name := framework.SpokeName(i)
			if err := framework.ApplyAgentRBAC(ctx, fleet.Hub, spoke, name); err != nil {
				setUpErr = fmt.Errorf("agent RBAC of %s: %w", name, err)
				return
			}
			for _, n := range nodes {
				node := ut.MakeNode(n.name).Resource(corev1.ResourceCPU, n.cpu).Resource(corev1.ResourceMemory, n.memory).Obj()
				if err := framework.CreateNode(ctx, spoke.AdminClient(), node); err != nil {
					setUpErr = fmt.Errorf("%s: %w", name, err)
					return
				}
			}
		}
	})
	if setUpErr != nil {
		t.Fatal(setUpErr)
	}
}

// env is one test's namespace, clients, processes and marker pods.
type env struct {
	t        *testing.T
	ns       string
	clusters clusterclient.Interface
	fleetfit fleetfitclient.Interface
	works    workclient.Interface
	// agents are the agents of cluster1..cluster3, in order.
	agents []*framework.Component
	// processes are every component the test started, for their logs on failure.
	processes []*framework.Component
	// markerCPU is what each spoke's marker pod requests now; markers counts the test's
	// marker pods so far.
	markerCPU resource.Quantity
	markers   int
}

// newEnv creates a namespace bound to the spokes' cluster set. When the test ends, after its
// processes stopped, it prints their logs if the test failed and deletes what the test made
// in the namespace and for it in the clusters' namespaces (no namespace controller runs on the
// hub), finalizers included, so that no later hub restores anything of it.
func newEnv(t *testing.T, name string) *env {
	t.Helper()
	setUpFleet(t)
	ctx := t.Context()
	cfg := fleet.Hub.AdminConfig()
	e := &env{
		t:        t,
		clusters: clusterclient.NewForConfigOrDie(cfg),
		fleetfit: fleetfitclient.NewForConfigOrDie(cfg),
		works:    workclient.NewForConfigOrDie(cfg),
	}
	ns, err := fleet.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.ns = ns.Name
	t.Cleanup(e.cleanUp)
	if _, err := e.clusters.ClusterV1beta2().ManagedClusterSetBindings(e.ns).Create(ctx, ut.MakeClusterSetBinding(e.ns, clusterSet), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) cleanUp() {
	if e.t.Failed() {
		for _, c := range e.processes {
			e.t.Logf("--- %s (%s) ---\n%s", c.Name(), c.Dir(), c.LogTail(logLines))
		}
	}
	ctx := context.Background()
	all := metav1.ListOptions{}
	intents := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns)
	_ = intents.DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	if list, err := intents.List(ctx, all); err == nil {
		for _, in := range list.Items {
			if len(in.Finalizers) > 0 {
				in.Finalizers = nil
				_, _ = intents.Update(ctx, &in, metav1.UpdateOptions{})
			}
		}
	}
	_ = e.clusters.ClusterV1beta1().Placements(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	_ = e.clusters.ClusterV1beta1().PlacementDecisions(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	for i := range fleet.Spokes {
		_ = e.works.WorkV1().ManifestWorks(framework.SpokeName(i)).DeleteCollection(ctx, metav1.DeleteOptions{}, e.worksOfTest())
	}
}

// worksOfTest selects the ManifestWorks of the test's intents.
func (e *env) worksOfTest() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{fleetfitv1alpha1.LabelIntentNamespace: e.ns}).String()}
}

// startAgents starts one fleetfit-agent process per spoke and waits until each has written a
// report of its own. An agent writes only what changed (or a heartbeat, minutes apart), so a
// test's agents would otherwise inherit the previous test's observedAt: each test first gives
// every spoke a marker pod with a request no earlier test used (see touchSpokes).
func (e *env) startAgents() {
	e.t.Helper()
	e.touchSpokes()
	since := time.Now()
	for i, spoke := range fleet.Spokes {
		a, err := framework.StartAgentProcess(e.t.Context(), fleet.Hub, spoke, framework.SpokeName(i), agentMinInterval)
		if err != nil {
			e.t.Fatal(err)
		}
		e.t.Cleanup(a.Stop)
		e.agents = append(e.agents, a)
		e.processes = append(e.processes, a)
	}
	e.waitFreshInventories(since)
}

// touchSpokes replaces each spoke's marker pod by one requesting a new amount of cpu, so that
// the next report of every agent differs from the last one and is written at once. The last
// marker is deleted when the test ends.
func (e *env) touchSpokes() {
	e.t.Helper()
	ctx := e.t.Context()
	prev := e.markerName()
	e.markers++
	e.markerCPU = *resource.NewMilliQuantity(10+markerSeq.Add(1), resource.DecimalSI)
	for _, spoke := range fleet.Spokes {
		pods := spoke.AdminClient().CoreV1().Pods(metav1.NamespaceDefault)
		if e.markers > 1 {
			// No kubelet confirms the deletion: remove the pod at once.
			if err := pods.Delete(ctx, prev, *metav1.NewDeleteOptions(0)); err != nil {
				e.t.Fatalf("deleting marker pod %s: %v", prev, err)
			}
		}
		pod := ut.MakePod(metav1.NamespaceDefault, e.markerName(), markerNode, corev1.ResourceList{corev1.ResourceCPU: e.markerCPU})
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	if e.markers == 1 {
		e.t.Cleanup(func() {
			for _, spoke := range fleet.Spokes {
				_ = spoke.AdminClient().CoreV1().Pods(metav1.NamespaceDefault).Delete(context.Background(), e.markerName(), *metav1.NewDeleteOptions(0))
			}
		})
	}
}

func (e *env) markerName() string { return fmt.Sprintf("marker-%s-%d", e.ns, e.markers) }

// waitFreshInventories waits until every spoke's inventory was written at or after since (to
// the second, the precision of observedAt) and shows both nodes Ready and the current marker
// pod as the only cpu requested.
func (e *env) waitFreshInventories(since time.Time) {
	e.t.Helper()
	since = since.Truncate(time.Second)
	for i := range fleet.Spokes {
		name := framework.SpokeName(i)
		framework.Eventually(e.t, func(ctx context.Context) error {
			inv, err := e.fleetfit.FleetfitV1alpha1().ClusterInventories(name).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			st := inv.Status
			var requested resource.Quantity
			for _, r := range st.Resources {
				if r.Name == corev1.ResourceCPU {
					requested = r.Requested
				}
			}
			if st.ObservedAt.Time.Before(since) || st.ReadyNodeCount != int32(len(nodes)) || requested.Cmp(e.markerCPU) != 0 {
				return fmt.Errorf("inventory of %s: observed at %s, %d ready nodes, cpu requested %s; want a report since %s with %d ready nodes and cpu requested %s",
					name, st.ObservedAt.UTC().Format(time.RFC3339), st.ReadyNodeCount, requested.String(), since.UTC().Format(time.RFC3339), len(nodes), e.markerCPU.String())
			}
			return nil
		})
	}
}

// killAgents kills every agent with SIGKILL.
func (e *env) killAgents() {
	e.t.Helper()
	for _, a := range e.agents {
		if err := a.Kill(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// restartAgents starts the killed agents again with the same command lines, after changing
// what the spokes run (touchSpokes) so that their first reports are written, and waits for
// those reports.
func (e *env) restartAgents() {
	e.t.Helper()
	e.touchSpokes()
	since := time.Now()
	for _, a := range e.agents {
		if err := a.Restart(e.t.Context(), nil); err != nil {
			e.t.Fatal(err)
		}
	}
	e.waitFreshInventories(since)
}

var (
	hubHelpOnce sync.Once
	hubHelp     string
	hubHelpErr  error
)

// requireHubFlags fails the test when bin/fleetfit-hub does not have every flag: the behaviour
// under test comes with it.
func requireHubFlags(t *testing.T, flags ...string) {
	t.Helper()
	hubHelpOnce.Do(func() {
		bin, err := framework.BinaryPath("fleetfit-hub")
		if err != nil {
			hubHelpErr = err
			return
		}
		out, err := exec.Command(bin, "--help").CombinedOutput()
		hubHelp, hubHelpErr = string(out), err
	})
	if hubHelpErr != nil {
		t.Fatalf("fleetfit-hub --help: %v\n%s", hubHelpErr, hubHelp)
	}
	var missing []string
	for _, f := range flags {
		if !strings.Contains(hubHelp, "--"+f+" ") && !strings.Contains(hubHelp, "--"+f+"=") {
			missing = append(missing, "--"+f)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("expected bin/fleetfit-hub to have the flags %v, which come with the behaviour under test; it lacks %v (rebuild it from a tree that has them)", flags, missing)
	}
}

// startHub runs bin/fleetfit-hub with args until the test ends.
func (e *env) startHub(args ...string) *framework.Component {
	e.t.Helper()
	hub, err := framework.StartHubProcess(e.t.Context(), fleet.Hub, args...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(hub.Stop)
	e.processes = append(e.processes, hub)
	return hub
}

// staleClusters returns what a hub's metric says: how many clusters have a stale inventory.
func (e *env) staleClusters(ctx context.Context, hub *framework.Component) (int, error) {
	v, found, err := framework.HubMetrics(ctx, fleet.Hub, hub, staleMetric)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("%s serves no metric %s", hub.Name(), staleMetric)
	}
	return int(v), nil
}

// waitStale waits until the hub's metric counts want stale clusters.
func (e *env) waitStale(hub *framework.Component, want int, within time.Duration) {
	e.t.Helper()
	e.eventuallyWithin(within, fmt.Sprintf("%s = %d", staleMetric, want), func(ctx context.Context) error {
		got, err := e.staleClusters(ctx, hub)
		if err == nil && got != want {
			err = fmt.Errorf("%s = %d", staleMetric, got)
		}
		return err
	})
}

// eventuallyWithin retries fn until it returns nil, failing the test after d with what was
// expected and fn's last error.
func (e *env) eventuallyWithin(d time.Duration, expected string, fn func(ctx context.Context) error) {
	e.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(e.t.Context(), framework.PollInterval, d, true, func(ctx context.Context) (bool, error) {
		err := fn(ctx)
		if err != nil && ctx.Err() != nil {
			return false, nil // cut short by the timeout; the previous error says more
		}
		last = err
		return err == nil, nil
	})
	if err != nil {
		e.t.Fatalf("expected %s within %v; last seen: %v", expected, d, last)
	}
}

// relabelClusters sets a label on every ManagedCluster, which makes the hub run a scheduling
// cycle for every placement.
func (e *env) relabelClusters(value string) {
	e.t.Helper()
	for i := range fleet.Spokes {
		name := framework.SpokeName(i)
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			mc, err := e.clusters.ClusterV1().ManagedClusters().Get(e.t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			mc.Labels["faults.fleetfit.io/touched"] = value
			_, err = e.clusters.ClusterV1().ManagedClusters().Update(e.t.Context(), mc, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			e.t.Fatalf("relabelling ManagedCluster %s: %v", name, err)
		}
	}
}

// logContains says whether a component's log (this run's) contains s.
func logContains(c *framework.Component, s string) bool {
	b, err := os.ReadFile(filepath.Join(c.Dir(), "fleetfit-hub.log"))
	return err == nil && strings.Contains(string(b), s)
}

// sleep waits d, or until the test ends.
func (e *env) sleep(d time.Duration) {
	select {
	case <-e.t.Context().Done():
	case <-time.After(d):
	}
}
