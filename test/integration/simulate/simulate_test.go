// Package simulate runs fleetfit's read-only commands — get clusters, get machinetypes, get
// placements, explain placement, candidates and simulate --from-hub — against a real hub whose managed
// clusters have fleetfit agents reporting their nodes (and, on cluster2, a MachineGroup),
// with fleetfit-hub scheduling, as a user would.
package simulate

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/cli"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/inventory"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

var fleet *framework.Fleet

func TestMain(m *testing.M) {
	framework.MainWithFleet(m, 2, framework.Options{}, &fleet)
}

const ns = "ml"

// fleetfit runs the CLI against the hub and returns its output.
func fleetfit(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	root := cli.NewCommand()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--kubeconfig", kubeconfig))
	if err := root.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("fleetfit %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestCommandsOnALiveHub(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	// cluster1 has an A100 node with 6 cores free; cluster2 a T4 node with 16.
	nodes := map[int][]*corev1.Node{
		0: {ut.MakeNode("a100-0").Resource("cpu", "8").Resource("memory", "64Gi").Resource("nvidia.com/gpu", "4").
			Label("nvidia.com/gpu.product", "A100").Obj()},
		1: {ut.MakeNode("t4-0").Resource("cpu", "16").Resource("memory", "64Gi").Resource("nvidia.com/gpu", "2").
			Label("nvidia.com/gpu.product", "Tesla-T4").Obj()},
	}
	// cluster2 also has a MachineGroup, whose status says what a machine controller would:
	// of two compute-xlarge machines, one is reserved and one used by a guest.
	createMachineGroup(t, fleet.Spokes[1])
	for i, spoke := range fleet.Spokes {
		for _, n := range nodes[i] {
			if err := framework.CreateNode(ctx, spoke.AdminClient(), n); err != nil {
				t.Fatal(err)
			}
		}
		if err := framework.ApplyAgentRBAC(ctx, hub, spoke, framework.SpokeName(i)); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			startMachineGroupReporter(t, hub, spoke, framework.SpokeName(i))
			continue
		}
		if _, err := framework.StartAgent(ctx, hub, spoke, framework.SpokeName(i), 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	// Two cores of the A100 node are taken.
	busy := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "busy", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "a100-0", Containers: []corev1.Container{{Name: "c", Image: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("2")}}}}},
	}
	if _, err := fleet.Spokes[0].AdminClient().CoreV1().Pods("default").Create(ctx, busy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	ff := fleetfitclient.NewForConfigOrDie(hub.AdminConfig())
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet("default"), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &clusterv1beta2.ManagedClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}, Spec: clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "default"}}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// "infer" needs one A100 and 4 cores on one node: only cluster1.
	p := &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "infer", Namespace: ns}, Spec: clusterv1beta1.PlacementSpec{NumberOfClusters: ptr.To[int32](1)}}
	if _, err := clusters.ClusterV1beta1().Placements(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ff.FleetfitV1alpha1().HPAIntents(ns).Create(ctx, a100Intent("infer", "4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The hub serves its HTTPS endpoint too, for /allocation_candidates.
	port := freePort(t)
	framework.RunHub(t, hub.AdminConfig(), "--bind-address", "127.0.0.1", "--secure-port", fmt.Sprint(port),
		"--cert-dir", filepath.Join(t.TempDir(), "certs"))

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "hub.kubeconfig")
	raw, err := framework.Kubeconfig(hub.AdminConfig(), "hub")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		d, err := clusters.ClusterV1beta1().PlacementDecisions(ns).Get(ctx, "infer-decision-1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(d.Status.Decisions) != 1 || d.Status.Decisions[0].ClusterName != "cluster1" {
			return fmt.Errorf("decisions are %v, want cluster1", d.Status.Decisions)
		}
		return nil
	})

	framework.Eventually(t, func(ctx context.Context) error {
		inv, err := ff.FleetfitV1alpha1().ClusterInventories("cluster2").Get(ctx, "cluster2", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(inv.Status.MachineGroups) != 1 {
			return fmt.Errorf("cluster2 reports the machine groups %+v, want general-machine", inv.Status.MachineGroups)
		}
		return nil
	})

	t.Run("get clusters", func(t *testing.T) {
		out := fleetfit(t, kubeconfig, "get", "clusters")
		for _, want := range [][]string{
			{"cluster1", "Unknown", "1/1", "6/8", "64Gi/64Gi", "A100 4/4", "<none>"},
			{"cluster2", "Unknown", "1/1", "16/16", "64Gi/64Gi", "Tesla-T4 2/2", "compute-xlarge 1/2"},
		} {
			if !ut.HasRow(out, want...) {
				t.Errorf("get clusters lacks the row %q:\n%s", want, out)
			}
		}
		out = fleetfit(t, kubeconfig, "get", "clusters", "-o", "wide")
		if want := []string{"cluster2", "Unknown", "1/1", "16/16", "64Gi/64Gi", "Tesla-T4 2/2", "general-machine/compute-xlarge 1/2"}; !ut.HasRow(out, want...) {
			t.Errorf("get clusters -o wide lacks the row %q:\n%s", want, out)
		}
	})
	t.Run("get machinetypes", func(t *testing.T) {
		want := [][]string{
			{"CLUSTER", "GROUP", "TYPE", "CPU", "MEMORY", "GPU", "MAXIMUM", "RESERVED", "USED", "WAITING", "READY"},
			{"cluster2", "general-machine", "compute-xlarge", "40", "128Gi", "2 nvidia.com/gpu NVIDIA-GeForce-RTX-3090", "2", "1", "1", "0", "true"},
		}
		for _, args := range [][]string{{"-A"}, {"cluster2"}} {
			out := fleetfit(t, kubeconfig, append([]string{"get", "machinetypes"}, args...)...)
			if diff := cmp.Diff(want, ut.TableRows(out)); diff != "" {
				t.Errorf("get machinetypes %s (-want,+got):\n%s", strings.Join(args, " "), diff)
			}
		}
		if out := fleetfit(t, kubeconfig, "get", "machinetypes", "cluster1"); !cmp.Equal(want[:1], ut.TableRows(out)) {
			t.Errorf("get machinetypes cluster1 printed\n%s\nwant the header only", out)
		}
	})
	t.Run("get placements", func(t *testing.T) {
		out := fleetfit(t, kubeconfig, "get", "placements", "-A")
		if want := []string{"ml", "infer", "1/1", "cluster1", "True", "AllDecisionsScheduled", "infer (Scheduled)"}; !ut.HasRow(out, want...) {
			t.Errorf("get placements lacks the row %q:\n%s", want, out)
		}
	})
	t.Run("explain placement", func(t *testing.T) {
		out := fleetfit(t, kubeconfig, "explain", "placement", "infer", "-n", ns)
		if !strings.Contains(out, "selects cluster1") {
			t.Errorf("explain does not say it selects cluster1:\n%s", out)
		}
		for _, want := range [][]string{
			{"cluster1", "selected", "-", "-"},
			{"cluster2", "rejected", "HardwareFit", "consumer infer/server: no schedulable node with nvidia.com/gpu.product In [A100]"},
		} {
			if !ut.HasRow(out, want...) {
				t.Errorf("explain lacks the row %q:\n%s", want, out)
			}
		}
	})
	t.Run("candidates", func(t *testing.T) {
		testCandidates(t, kubeconfig, fmt.Sprintf("https://127.0.0.1:%d", port))
	})
	t.Run("simulate from the hub changes nothing", func(t *testing.T) {
		before, err := clusters.ClusterV1beta1().PlacementDecisions(ns).Get(ctx, "infer-decision-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// A second intent that needs 8 cores next to an A100: cluster1's node has 6 free
		// (and 4 of them are for infer now) — nowhere.
		file := filepath.Join(dir, "train.yaml")
		if err := os.WriteFile(file, []byte(`
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: train, namespace: ml}
spec: {numberOfClusters: 1}
---
apiVersion: fleetfit.io/v1alpha1
kind: HPAIntent
metadata: {name: train, namespace: ml}
spec:
  placementRef: {name: train}
  consumers:
  - name: server
    target: {apiVersion: apps/v1, kind: Deployment, name: server, container: server}
    replicas: 1
    requirements:
    - {name: gpu, resource: {name: nvidia.com/gpu, limits: 1}}
    - {name: cpu, resource: {name: cpu, requests: 8}}
    - {name: a100, feature: {key: nvidia.com/gpu.product, values: [A100]}}
`), 0o600); err != nil {
			t.Fatal(err)
		}
		out := fleetfit(t, kubeconfig, "simulate", "--from-hub", "-f", file)
		for _, want := range [][]string{
			{"ml/infer", "1/1", "cluster1", "True", "AllDecisionsScheduled"},
			{"ml/train", "0/1", "-", "False", "NoManagedClusterMatched"},
		} {
			if !ut.HasRow(out, want...) {
				t.Errorf("simulate lacks the row %q:\n%s", want, out)
			}
		}
		if want := "cluster1: consumer train/server: no schedulable node with nvidia.com/gpu.product In [A100] has 8 cpu free; the best has 6"; !strings.Contains(out, want) {
			t.Errorf("simulate lacks %q:\n%s", want, out)
		}
		if _, err := clusters.ClusterV1beta1().Placements(ns).Get(ctx, "train", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("simulate created the placement train on the hub: %v", err)
		}
		after, err := clusters.ClusterV1beta1().PlacementDecisions(ns).Get(ctx, "infer-decision-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != before.ResourceVersion {
			t.Errorf("simulate changed infer's decision: resourceVersion %s -> %s", before.ResourceVersion, after.ResourceVersion)
		}
	})
}

func a100Intent(name, cpu string) *v1alpha1.HPAIntent {
	return ut.MakeHPAIntent(name, ns).Placement(name).Consumer(
		ut.MakeConsumer("server").Target("Deployment", "server", "server").Replicas(1).Requirement(
			ut.MakeResource("gpu", "nvidia.com/gpu").Limits("1").Obj(),
			ut.MakeResource("cpu", "cpu").Requests(cpu).Obj(),
			ut.MakeFeature("a100", "nvidia.com/gpu.product").Operator(corev1.NodeSelectorOpIn).Values("A100").Obj(),
		).Obj(),
	).Obj()
}

// createMachineGroup creates the MachineGroup general-machine on spoke with its status as a
// machine controller would write it: compute-xlarge, 2 machines, 1 reserved and 1 used.
func createMachineGroup(t *testing.T, spoke *framework.ControlPlane) {
	t.Helper()
	groups := fleetfitclient.NewForConfigOrDie(spoke.AdminConfig()).FleetfitV1alpha1().MachineGroups()
	g, err := groups.Create(t.Context(), ut.MakeMachineGroup("general-machine").
		MachineType(ut.MakeGroupMachineType("compute-xlarge", "40", "128Gi").Available(2).
			GPU(v1alpha1.MachineGPU{Num: 2, Product: "NVIDIA-GeForce-RTX-3090"}).Obj()).
		Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.Status.Conditions = []metav1.Condition{{Type: machinegroup.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}}
	g.Status.AvailableMachines = []v1alpha1.AvailableMachine{{Name: "compute-xlarge", Usage: v1alpha1.MachineUsage{Maximum: 2, Reserved: 1, Used: 1}}}
	if _, err := groups.UpdateStatus(t.Context(), g, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// startMachineGroupReporter runs cluster's reporter with machine groups on, as fleetfit-agent
// runs it by default, until the test ends.
func startMachineGroupReporter(t *testing.T, hub, spoke *framework.ControlPlane, cluster string) {
	t.Helper()
	r, err := reporter.New(reporter.Clients{
		Spoke: spoke.AdminClient(), Hub: fleetfitclient.NewForConfigOrDie(hub.AdminConfig()),
		HubCluster: clusterclient.NewForConfigOrDie(hub.AdminConfig()), SpokeFleetfit: fleetfitclient.NewForConfigOrDie(spoke.AdminConfig()),
	}, reporter.Options{ClusterName: cluster, Inventory: inventory.DefaultConfig(), MinInterval: 200 * time.Millisecond, MachineGroups: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("reporter of %s: %v", cluster, err)
		}
	})
}
