// Package demo runs fleetfit's local demo fleet: a hub and managed clusters,
// each a real kube-apiserver and etcd on loopback, with OCM's and fleetfit's
// APIs installed, the clusters registered, an example Placement and
// HPAIntent (EMCO's fwall) applied, and fleetfit-hub scheduling the
// Placement — ready to look at with kubectl.
package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	hubcmd "github.com/fleetfit/fleetfit/pkg/cmd/hub"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// Namespace holds the demo's Placement and HPAIntent on the hub.
const Namespace = "demo"

// Options configure the demo.
type Options struct {
	// Dir receives one kubeconfig per cluster.
	Dir string
	// Spokes is the number of managed clusters.
	Spokes int
}

// Run starts the fleet, prints how to reach it, calls ready (when not nil),
// and keeps the fleet up until ctx ends; then everything is stopped and
// removed.
func Run(ctx context.Context, o Options, out io.Writer, ready func(*framework.Fleet)) error {
	fmt.Fprintf(out, "Starting a hub and %d managed clusters (kube-apiserver + etcd each, on loopback)...\n", o.Spokes)
	fleet, err := framework.StartFleet(ctx, o.Spokes, framework.Options{})
	if err != nil {
		return err
	}
	defer fleet.Stop()
	if err := fleet.RegisterSpokes(ctx); err != nil {
		return err
	}
	if err := applyExamples(ctx, fleet); err != nil {
		return err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tROLE\tSERVER\tKUBECONFIG")
	for i, cp := range append([]*framework.ControlPlane{fleet.Hub}, fleet.Spokes...) {
		role := "managed cluster"
		if i == 0 {
			role = "hub"
		}
		path := filepath.Join(o.Dir, cp.Name+".kubeconfig")
		raw, err := framework.Kubeconfig(cp.AdminConfig(), cp.Name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return err
		}
		defer os.Remove(path)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cp.Name, role, cp.URL(), path)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := startAgents(ctx, out, fleet); err != nil {
		return err
	}
	decided, err := startHub(ctx, out, fleet, filepath.Join(o.Dir, "hub.kubeconfig"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, `
On the hub: ManagedClusters %s, the Placement %s/fwall and the HPAIntent %s/fwall
(EMCO's firewall example). Each managed cluster has nodes (cluster1 a GPU node, the others
CPU nodes) and a fleetfit agent reporting them; fleetfit-hub runs and has scheduled the
Placement by the intent's requirements: %s.
Look around with kubectl, for example:

  kubectl --kubeconfig %s get managedclusters,placements,placementdecisions,hpaintents -A

Press Ctrl-C to stop; every process and file of the fleet is removed.
`, clusterNames(fleet), Namespace, Namespace, decided, filepath.Join(o.Dir, "hub.kubeconfig"))
	if ready != nil {
		ready(fleet)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "Stopping the fleet...")
	return nil
}

func clusterNames(f *framework.Fleet) string {
	s := ""
	for i := range f.Spokes {
		if i > 0 {
			s += ", "
		}
		s += framework.SpokeName(i)
	}
	return s
}

// applyExamples creates the demo namespace, binds the default cluster set to
// it, and applies a Placement and the fwall HPAIntent.
func applyExamples(ctx context.Context, f *framework.Fleet) error {
	cfg := f.Hub.AdminConfig()
	if _, err := f.Hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	clusters := clusterclient.NewForConfigOrDie(cfg)
	set := &clusterv1beta2.ManagedClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, set, metav1.CreateOptions{}); err != nil {
		return err
	}
	binding := &clusterv1beta2.ManagedClusterSetBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: Namespace},
		Spec:       clusterv1beta2.ManagedClusterSetBindingSpec{ClusterSet: "default"},
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(Namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return err
	}
	placement := &clusterv1beta1.Placement{
		ObjectMeta: metav1.ObjectMeta{Name: ut.FwallName, Namespace: Namespace},
		Spec:       clusterv1beta1.PlacementSpec{NumberOfClusters: ptr.To[int32](1)},
	}
	if _, err := clusters.ClusterV1beta1().Placements(Namespace).Create(ctx, placement, metav1.CreateOptions{}); err != nil {
		return err
	}
	intent := ut.FwallHPAIntent(Namespace).Obj()
	_, err := fleetfitclient.NewForConfigOrDie(cfg).FleetfitV1alpha1().HPAIntents(Namespace).Create(ctx, intent, metav1.CreateOptions{})
	return err
}

// startHub runs fleetfit-hub in-process against the demo hub until ctx ends, and waits until
// it has scheduled the demo Placement; it returns the decided clusters.
func startHub(ctx context.Context, out io.Writer, f *framework.Fleet, kubeconfig string) (string, error) {
	fmt.Fprintln(out, "Starting fleetfit-hub...")
	o := hubcmd.NewOptions()
	o.Kubeconfig = kubeconfig
	o.LeaderElect = false
	o.Serving.SecureServing.BindPort = 0
	go func() {
		if err := o.Run(ctx); err != nil {
			fmt.Fprintf(out, "fleetfit-hub stopped: %v\n", err)
		}
	}()
	clusters := clusterclient.NewForConfigOrDie(f.Hub.AdminConfig())
	var decided []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := clusters.ClusterV1beta1().PlacementDecisions(Namespace).Get(ctx, ut.FwallName+"-decision-1", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		decided = decided[:0]
		for _, cd := range d.Status.Decisions {
			decided = append(decided, cd.ClusterName)
		}
		return len(decided) > 0, nil
	})
	if err != nil {
		return "", fmt.Errorf("waiting for fleetfit-hub to schedule %s/%s: %w", Namespace, ut.FwallName, err)
	}
	return strings.Join(decided, ", "), nil
}

// demoNodes are the nodes of each managed cluster: the first has an A100 GPU node, the others
// CPU nodes with and without AVX-512.
func demoNodes(i int) []*corev1.Node {
	if i == 0 {
		return []*corev1.Node{
			ut.MakeNode("gpu-a100-0").Resource("cpu", "32").Resource("memory", "128Gi").Resource("nvidia.com/gpu", "4").
				Label("nvidia.com/gpu.product", "A100").Label("feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true").Obj(),
			ut.MakeNode("cpu-0").Resource("cpu", "8").Resource("memory", "32Gi").Obj(),
		}
	}
	return []*corev1.Node{
		ut.MakeNode("cpu-avx512-0").Resource("cpu", "16").Resource("memory", "64Gi").
			Label("feature.node.kubernetes.io/cpu-cpuid.AVX512F", "true").Obj(),
		ut.MakeNode("cpu-1").Resource("cpu", "16").Resource("memory", "64Gi").Obj(),
	}
}

// startAgents creates the demo nodes and runs a fleetfit agent per managed cluster until ctx
// ends.
func startAgents(ctx context.Context, out io.Writer, f *framework.Fleet) error {
	fmt.Fprintln(out, "Creating nodes and starting a fleetfit agent on each managed cluster...")
	for i, spoke := range f.Spokes {
		for _, n := range demoNodes(i) {
			if err := framework.CreateNode(ctx, spoke.AdminClient(), n); err != nil {
				return err
			}
		}
		if err := framework.ApplyAgentRBAC(ctx, f.Hub, spoke, framework.SpokeName(i)); err != nil {
			return err
		}
		done, err := framework.StartAgent(ctx, f.Hub, spoke, framework.SpokeName(i), time.Second)
		if err != nil {
			return err
		}
		go func() {
			if err := <-done; err != nil {
				fmt.Fprintf(out, "fleetfit-agent of %s stopped: %v\n", framework.SpokeName(i), err)
			}
		}()
	}
	return nil
}
