package simulate

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/fleetfit/fleetfit/pkg/allocationcandidates"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

const (
	// runawayClusters clusters of runawayNodes one-shape nodes of eight cores each: enough
	// combinations that an unbounded search would take the hub's memory and CPU for hours.
	runawayClusters = 50
	runawayNodes    = 15
	// runawayFor is how long the worst queries are sent.
	runawayFor = 15 * time.Second
	// heapBound is how much the heap of the test process (the hub runs in it) may grow over
	// its idle size while the worst queries run: the README's bound for the endpoint.
	heapBound = 128 << 20
)

// numberedGroups returns n numbered groups of res with policy.
func numberedGroups(n int, res, policy string) string {
	q := "group_policy=" + policy
	for i := 1; i <= n; i++ {
		q += fmt.Sprintf("&resources%d=%s", i, res)
	}
	return q
}

// TestCandidatesUnderRunawayQueries sends the queries that used to run away — every
// combination of seven groups, sixteen isolated groups no cluster has room for, 485 groups,
// and searches whose callers leave — to a hub over and over, from several callers at once.
// Each gets its answer (a cut answer, or a 400 naming what to change); meanwhile a cheap
// query is answered, /healthz says ok and the scheduler does decide a new Placement, so that
// ok is the truth; and the heap stays within heapBound.
func TestCandidatesUnderRunawayQueries(t *testing.T) {
	ctx := t.Context()
	cp, err := framework.StartHubPlane(ctx, "runaway")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	kube := cp.AdminClient()
	clusters := clusterclient.NewForConfigOrDie(cp.AdminConfig())
	ff := fleetfitclient.NewForConfigOrDie(cp.AdminConfig())
	const set = "runaway"
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet(set), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, kube, set)
	binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: set, Namespace: set},
		Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: set}}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(set).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var nodes []*corev1.Node
	for n := range runawayNodes {
		nodes = append(nodes, ut.MakeNode(fmt.Sprintf("n%d", n)).Label("fleetfit.io/name", fmt.Sprint(n)).
			Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").Obj())
	}
	for c := range runawayClusters {
		name := fmt.Sprintf("cluster%02d", c)
		want := ut.MakeCluster(name).ClusterSet(set).Available().Obj()
		got, err := clusters.ClusterV1().ManagedClusters().Create(ctx, want.DeepCopy(), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Status = want.Status
		if _, err := clusters.ClusterV1().ManagedClusters().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		createNamespace(t, kube, name)
		inv := ut.MakeInventory(name, time.Now(), nodes)
		created, err := ff.FleetfitV1alpha1().ClusterInventories(name).Create(ctx, inv.DeepCopy(), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = inv.Status
		if _, err := ff.FleetfitV1alpha1().ClusterInventories(name).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A tenth of the default work budget, and a long timeout: the budget, not the clock, must
	// stop the search however slow this machine is (tests run with -race, beside others).
	hub, _ := framework.RunHubServing(t, cp.AdminConfig(), "--inventory-stale-after=1h",
		"--candidates-work-budget=10000000", "--candidates-timeout=2m")
	base := "https://" + hub.Addr()
	client := adminClient(t, cp.AdminConfig().CertData, cp.AdminConfig().KeyData)
	// The hub has read every cluster once a cheap query sees them all.
	framework.Eventually(t, func(ctx context.Context) error {
		status, body, err := get(ctx, client, base+allocationcandidates.Path+"?resources=cpu:8&limit=1000")
		if err != nil {
			return err
		}
		var resp allocationcandidates.Response
		if status != http.StatusOK || json.Unmarshal([]byte(body), &resp) != nil {
			return fmt.Errorf("%d %.300s", status, body)
		}
		if got, want := len(resp.AllocationRequests), runawayClusters*runawayNodes; got != want {
			return fmt.Errorf("%d candidates, want %d", got, want)
		}
		return nil
	})

	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	idle, peak := ms.HeapInuse, ms.HeapInuse

	worst := []struct{ name, query, want string }{
		{"seven groups", numberedGroups(7, "cpu:1", "none"), `200 {"allocation_requests":`},
		{"sixteen isolated groups", numberedGroups(16, "cpu:5", "isolate") + "&limit=1",
			`400 {"errors":[{"status":400,"title":"Bad Request","detail":"query: too costly to answer`},
		{"485 groups", numberedGroups(485, "cpu:1", "none") + "&limit=1",
			`400 {"errors":[{"status":400,"title":"Bad Request","detail":"resources113: a numbered group beyond the 16`},
	}
	runCtx, stop := context.WithTimeout(ctx, runawayFor)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for _, w := range worst {
		wg.Go(func() {
			for runCtx.Err() == nil {
				status, body, err := get(runCtx, client, base+allocationcandidates.Path+"?"+w.query)
				if runCtx.Err() != nil {
					return
				}
				if got := fmt.Sprintf("%d %s", status, body); err != nil || !strings.HasPrefix(got, w.want) {
					errs <- fmt.Errorf("%s: got %.300s (%v), want %s", w.name, got, err, w.want)
					return
				}
				if w.name == "seven groups" && !strings.Contains(body, `"truncated":{"candidates":1000,`) {
					errs <- fmt.Errorf("%s: the answer does not say it was cut: %.300s", w.name, body)
					return
				}
			}
		})
	}
	// Callers that leave while their search runs.
	wg.Go(func() {
		for runCtx.Err() == nil {
			leave, cancel := context.WithTimeout(runCtx, 20*time.Millisecond)
			_, _, _ = get(leave, client, base+allocationcandidates.Path+"?"+numberedGroups(16, "cpu:5", "isolate"))
			cancel()
		}
	})
	wg.Go(func() {
		for runCtx.Err() == nil {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			time.Sleep(50 * time.Millisecond)
		}
	})

	// Meanwhile, a Placement is decided, a cheap query answered and health is ok.
	time.Sleep(time.Second)
	p := ut.MakePlacement("during", set).NumberOfClusters(1).ClusterSets(set).Obj()
	if _, err := clusters.ClusterV1beta1().Placements(set).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		d, err := clusters.ClusterV1beta1().PlacementDecisions(set).Get(ctx, "during-decision-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(d.Status.Decisions) != 1 {
			return fmt.Errorf("decisions are %v, want one cluster", d.Status.Decisions)
		}
		return nil
	})
	decided := runCtx.Err() == nil
	status, body, err := get(ctx, client, base+allocationcandidates.Path+"?resources=cpu:1&limit=1")
	if err != nil || status != http.StatusOK || !strings.Contains(body, `"cluster00/`) {
		t.Errorf("a cheap query during the worst ones: %d %.300s (%v), want cluster00's first node", status, body, err)
	}
	if status, body, err := get(ctx, client, base+"/healthz"); err != nil || status != http.StatusOK || body != "ok" {
		t.Errorf("/healthz during the worst queries: %d %q (%v), want 200 ok", status, body, err)
	}
	healthyDuring := runCtx.Err() == nil
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !decided || !healthyDuring {
		t.Errorf("the Placement was decided while the worst queries ran: %v; the cheap query and /healthz answered then: %v; "+
			"make runawayFor longer", decided, healthyDuring)
	}
	if grown := int64(peak) - int64(idle); grown > heapBound {
		t.Errorf("the heap grew by %d MiB while the worst queries ran, more than %d MiB", grown>>20, heapBound>>20)
	} else {
		t.Logf("the heap grew by %d MiB at most while the worst queries ran", max(0, grown)>>20)
	}
}

func createNamespace(t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	if _, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// adminClient returns a client that authenticates with a client certificate; the hub's
// serving certificate is self-signed in this test.
func adminClient(t *testing.T, certPEM, keyPEM []byte) *http.Client {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true, //nolint:gosec
	}}}
}

// get returns the status and body of GET u.
func get(ctx context.Context, c *http.Client, u string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
