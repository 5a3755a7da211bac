// Package demo checks that `make demo` brings up what it promises: a hub and three managed
// clusters joined by OCM's own registration, fleetfit-agent running as the OCM add-on with the
// hub identity OCM issued it and reporting to the hub, its hardware facts in the clusters'
// ClusterClaims, the example Placements decided by fleetfit-hub on the clusters that have the
// hardware, and every delivered pod Running on a node that has what it asked for. It needs
// `make build` and `make tools`.
package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	"github.com/fleetfit/fleetfit/test/demo"
	"github.com/fleetfit/fleetfit/test/framework"
)

func TestMain(m *testing.M) { framework.Main(m) }

// syncBuffer lets the demo write while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// settleTimeout bounds the demo's waits here; Run reports what did not settle and goes on,
// and the checks below then fail.
const settleTimeout = 2 * time.Minute

// wantDecided is where each example must go: the only cluster with QuickAssist, the only one
// with an A100, the only one with an AVX-512 node that pods without GPUs may use; fwall needs 4
// free cores on one node besides its optional GPU, which only cluster2 has next to a GPU.
var wantDecided = map[string]string{
	"fwall":     "cluster2",
	"analytics": "cluster3",
	"training":  "cluster1",
	"inference": "cluster2",
	// Two machines of compute-xlarge: cluster1 has one free, cluster2 two.
	"render": "cluster2",
}

// wantNode says, per app label of a delivered pod, what its node must have.
var wantNode = map[string]func(*corev1.Node) error{
	"trainer":    hasLabel(demo.LabelGPUProduct, "A100"),
	"core-fwall": hasResource(demo.ResourceGPU),
	"api-server": lacksResource(demo.ResourceGPU),
	"inference":  hasLabel(demo.LabelAVX512, "true"),
	"logger":     hasResource(demo.ResourceQAT),
	"ai-model":   func(*corev1.Node) error { return nil },
	"render":     hasLabel(machinegroup.MachineTypeKey("compute-xlarge"), demo.MachineGroupName),
	// web's replicas, split among the clusters, need no GPU.
	"web": lacksResource(demo.ResourceGPU),
}

func TestDemoFleet(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "_demo")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	checked := false
	err := demo.Run(ctx, demo.Options{Dir: dir, SettleTimeout: settleTimeout}, &out, func(*framework.Fleet) {
		defer cancel()
		checked = true
		checkFleet(t, dir)
	})
	if err != nil {
		t.Fatalf("demo.Run: %v\n%s", err, out.String())
	}
	if !checked {
		t.Fatalf("the demo never called ready:\n%s", out.String())
	}
	for _, want := range []string{
		"Starting a hub and 3 managed clusters",
		"cluster1, cluster2, cluster3 joined the hub as clusteradm join and accept do",
		"$ bin/fleetfit install addon --kubeconfig " + filepath.Join(dir, "hub.kubeconfig"),
		"$ bin/fleetfit addon enable --clusters cluster1,cluster2,cluster3 --kubeconfig " + filepath.Join(dir, "hub.kubeconfig"),
		"Deploying fleetfit-agent add-on to managed cluster cluster3 (namespace fleetfit-agent).",
		"cluster2: fleetfit-agent reports to the hub as system:open-cluster-management:cluster:cluster2:addon:fleetfit-agent:agent:",
		"cluster3: nodes Ready: cpu-1 (-), qat-0 (4× intel.com/qat, QAT)",
		"fleetfit-hub decided: ",
		"Every delivered pod is Running",
		"cluster1: MachineGroup general-machine reserves 2 compute-medium and 1 compute-xlarge with reservation pods",
		"cluster2: MachineGroup general-machine reserves 2 compute-xlarge with reservation pods",
		"took a compute-medium over: it runs on md-0 with requests cpu 6, memory 24Gi = limits cpu 6, memory 24Gi",
		"fleetfit-hub decided render → cluster2: 2 × compute-xlarge",
		"render's pods run as guests of general-machine",
		"fleetfit-hub split web's 7 replicas evenly",
		"$ bin/fleetfit get machinetypes -A",
		"$ bin/fleetfit get clusters --kubeconfig " + filepath.Join(dir, "hub.kubeconfig"),
		"OCM's registration agents report the ClusterClaims fleetfit-agent keeps, with every cluster's nodes",
		"$ kubectl get managedclusteraddons -A",
		"$ kubectl get managedcluster cluster1 -o jsonpath='{.status.clusterClaims}'",
		"gpu-products.fleetfit.io             A100,NVIDIA-GeForce-RTX-3090",
		"$ bin/fleetfit get placements -A",
		"$ bin/fleetfit explain placement fwall -n demo",
		"Pods delivered in namespace demo",
		filepath.Join(dir, "cluster3.kubeconfig"),
		"make demo-down",
		"Stopped",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
	if t.Failed() {
		t.Logf("demo output:\n%s", out.String())
	}
	for _, name := range []string{"hub", "cluster1", "cluster2", "cluster3"} {
		if _, err := os.Stat(filepath.Join(dir, name+".kubeconfig")); !os.IsNotExist(err) {
			t.Errorf("kubeconfig of %s is still there after the demo stopped (err %v)", name, err)
		}
	}
}

// checkFleet looks at the running demo through the kubeconfigs it wrote, as a user would.
func checkFleet(t *testing.T, dir string) {
	ctx := t.Context()
	load := func(name string) *rest.Config {
		cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, name+".kubeconfig"))
		if err != nil {
			t.Fatalf("loading the kubeconfig of %s: %v", name, err)
		}
		return cfg
	}
	hub := clusterclient.NewForConfigOrDie(load("hub"))
	clusters, err := hub.ClusterV1().ManagedClusters().List(ctx, metav1.ListOptions{})
	if err != nil || len(clusters.Items) != 3 {
		t.Errorf("managed clusters on the hub: got %d (err %v), want 3", len(clusters.Items), err)
	}
	for placement, want := range wantDecided {
		decisions, err := hub.ClusterV1beta1().PlacementDecisions(demo.Namespace).List(ctx,
			metav1.ListOptions{LabelSelector: "cluster.open-cluster-management.io/placement=" + placement})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range decisions.Items {
			for _, cd := range d.Status.Decisions {
				got = append(got, cd.ClusterName)
			}
		}
		if !slices.Equal(got, []string{want}) {
			t.Errorf("Placement %s decided %v, want [%s]", placement, got, want)
		}
	}

	pods := 0
	for _, cluster := range []string{"cluster1", "cluster2", "cluster3"} {
		spoke := kubernetes.NewForConfigOrDie(load(cluster))
		checkJoined(t, load("hub"), spoke, cluster)
		checkAddOn(t, load("hub"), spoke, cluster)
		checkClaims(t, load("hub"), spoke, cluster)
		list, err := spoke.CoreV1().Pods(demo.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Items {
			pods++
			if p.Status.Phase != corev1.PodRunning {
				t.Errorf("%s: pod %s is %s, want Running", cluster, p.Name, p.Status.Phase)
			}
			check, ok := wantNode[p.Labels["app"]]
			if !ok {
				t.Errorf("%s: pod %s belongs to no example", cluster, p.Name)
				continue
			}
			node, err := spoke.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
			if err != nil {
				t.Errorf("%s: node %q of pod %s: %v", cluster, p.Spec.NodeName, p.Name, err)
				continue
			}
			if err := check(node); err != nil {
				t.Errorf("%s: pod %s runs on the wrong node: %v", cluster, p.Name, err)
			}
		}
	}
	want := 0
	for _, e := range append(demo.Examples(), demo.MachineExample(), demo.SplitExample()) {
		want += int(e.Replicas)
	}
	if pods != want {
		t.Errorf("the clusters run %d delivered pods, want %d", pods, want)
	}
}

func hasLabel(key, value string) func(*corev1.Node) error {
	return func(n *corev1.Node) error {
		if n.Labels[key] != value {
			return fmt.Errorf("node %s has %s=%q, want %q", n.Name, key, n.Labels[key], value)
		}
		return nil
	}
}

func hasResource(name corev1.ResourceName) func(*corev1.Node) error {
	return func(n *corev1.Node) error {
		if q, ok := n.Status.Allocatable[name]; !ok || q.IsZero() {
			return fmt.Errorf("node %s has no %s", n.Name, name)
		}
		return nil
	}
}

func lacksResource(name corev1.ResourceName) func(*corev1.Node) error {
	return func(n *corev1.Node) error {
		if q, ok := n.Status.Allocatable[name]; ok && !q.IsZero() {
			return fmt.Errorf("node %s has %s, which the pod did not ask for", n.Name, name)
		}
		return nil
	}
}
