package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	"github.com/fleetfit/fleetfit/pkg/agent/clusterclaims"
	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// claimsInterval is the claims' rate limit in this test: long enough to tell batches apart.
const claimsInterval = 3 * time.Second

// TestClusterClaims runs the reporter and the cluster claims of cluster2 with the agent's
// identities on the spoke, and checks that the claims appear as pkg/inventory's report
// says, follow node changes no more than once per interval, replace the agent's stale
// claims and leave others' alone.
func TestClusterClaims(t *testing.T) {
	ctx := t.Context()
	cluster := framework.SpokeName(1)
	spoke := fleet.Spokes[1]
	admin := clusterclient.NewForConfigOrDie(spoke.AdminConfig())
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := framework.ApplyAgentRBAC(ctx, fleet.Hub, spoke, cluster); err != nil {
		t.Fatal(err)
	}
	if err := framework.CreateNode(ctx, spoke.AdminClient(), ut.MakeNode("claims-0").Resource("cpu", "8").Resource("memory", "32Gi").
		Label("feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true").Obj()); err != nil {
		t.Fatal(err)
	}
	foreign := &clusterv1alpha1.ClusterClaim{ObjectMeta: metav1.ObjectMeta{Name: "platform.open-cluster-management.io"}, Spec: clusterv1alpha1.ClusterClaimSpec{Value: "Other"}}
	stale := &clusterv1alpha1.ClusterClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "retired.node.fleetfit.io", Labels: map[string]string{clusterclaims.ManagedByLabel: clusterclaims.ManagedBy}},
		Spec:       clusterv1alpha1.ClusterClaimSpec{Value: "true"},
	}
	for _, c := range []*clusterv1alpha1.ClusterClaim{foreign, stale} {
		if _, err := admin.ClusterV1alpha1().ClusterClaims().Create(ctx, c, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = admin.ClusterV1alpha1().ClusterClaims().DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})

	// Every write to the agent's claims from now on, as the test sees them.
	selector := clusterclaims.ManagedByLabel + "=" + clusterclaims.ManagedBy
	list, err := admin.ClusterV1alpha1().ClusterClaims().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	w, err := admin.ClusterV1alpha1().ClusterClaims().Watch(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var writes []time.Time
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added || ev.Type == watch.Modified || ev.Type == watch.Deleted {
				mu.Lock()
				writes = append(writes, time.Now())
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.Stop)

	startAgentWithClaims(t, spoke, cluster)
	waitForClaims(t, spoke.AdminClient(), admin)

	// Three node changes a third of the interval apart: the claims follow in at most two
	// writes after the first, each at least an interval after the one before.
	for i := range 3 {
		n := ut.MakeNode(fmt.Sprintf("claims-gpu-%d", i)).Resource("cpu", "16").Resource("memory", "64Gi").Resource(gpu, "2").
			Label(gpuProduct, fmt.Sprintf("L%d", 4*(i+1))).Obj()
		if err := framework.CreateNode(ctx, spoke.AdminClient(), n); err != nil {
			t.Fatal(err)
		}
		time.Sleep(claimsInterval / 3)
	}
	waitForClaims(t, spoke.AdminClient(), admin)
	mu.Lock()
	batches := batchStarts(writes, claimsInterval/3)
	mu.Unlock()
	if len(batches) < 2 {
		t.Fatalf("writes %v: want a first batch and at least one more", batches)
	}
	for i := 1; i < len(batches); i++ {
		// The agent's clock starts an interval at the sync, a little before the
		// first event reaches the test.
		if gap := batches[i].Sub(batches[i-1]); gap < claimsInterval-claimsInterval/10 {
			t.Errorf("claims written %v after the previous write, want at least %v (all batches: %v)", gap, claimsInterval, batches)
		}
	}

	// Others' claim is as it was.
	got, err := admin.ClusterV1alpha1().ClusterClaims().Get(ctx, foreign.Name, metav1.GetOptions{})
	if err != nil || got.Spec.Value != foreign.Spec.Value || len(got.Labels) != 0 {
		t.Errorf("foreign claim: %v, %v; want it untouched", got, err)
	}
}

// startAgentWithClaims runs, until the test ends, the reporter and the claims of spoke as
// fleetfit-agent runs them, with the identities deploy/agent grants.
func startAgentWithClaims(t *testing.T, spoke *framework.ControlPlane, cluster string) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), logger))
	spokeCfg, err := spoke.UserConfig("system:serviceaccount:fleetfit-agent:fleetfit-agent", "system:serviceaccounts")
	if err != nil {
		t.Fatal(err)
	}
	hubCfg, err := fleet.Hub.UserConfig(deployagent.AgentUser(cluster))
	if err != nil {
		t.Fatal(err)
	}
	claims, err := clusterclaims.New(clusterclient.NewForConfigOrDie(spokeCfg), clusterclaims.Options{MinInterval: claimsInterval})
	if err != nil {
		t.Fatal(err)
	}
	r, err := reporter.New(reporter.Clients{
		Spoke: kubernetes.NewForConfigOrDie(spokeCfg), Hub: fleetfitclient.NewForConfigOrDie(hubCfg), HubCluster: clusterclient.NewForConfigOrDie(hubCfg),
	}, reporter.Options{ClusterName: cluster, Inventory: inventory.DefaultConfig(), MinInterval: minInterval, OnReport: claims.Observe})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- claims.Run(ctx) }()
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("agent: %v", err)
			}
		}
	})
}

// waitForClaims waits until the agent's claims on the spoke are those of pkg/inventory's
// report of its nodes and pods.
func waitForClaims(t *testing.T, spoke kubernetes.Interface, claims clusterclient.Interface) {
	t.Helper()
	framework.Eventually(t, func(ctx context.Context) error {
		st, err := expectedReport(ctx, spoke)
		if err != nil {
			return err
		}
		want := clusterclaims.Desired(&st, clusterclaims.DefaultClaims)
		list, err := claims.ClusterV1alpha1().ClusterClaims().List(ctx, metav1.ListOptions{LabelSelector: clusterclaims.ManagedByLabel + "=" + clusterclaims.ManagedBy})
		if err != nil {
			return err
		}
		var got []clusterclaims.Claim
		for _, c := range list.Items {
			got = append(got, clusterclaims.Claim{Name: c.Name, Value: c.Spec.Value})
		}
		if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b clusterclaims.Claim) bool { return a.Name < b.Name })); diff != "" {
			return fmt.Errorf("claims (-want,+got):\n%s", diff)
		}
		return nil
	})
}

// batchStarts groups times less than gap apart into batches and returns when each began.
func batchStarts(times []time.Time, gap time.Duration) []time.Time {
	var starts []time.Time
	for i, at := range times {
		if i == 0 || at.Sub(times[i-1]) >= gap {
			starts = append(starts, at)
		}
	}
	return starts
}
