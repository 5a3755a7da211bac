// Package demo runs fleetfit's local demo fleet (`make demo`): a hub and three managed
// clusters, each a real etcd and kube-apiserver on loopback. The clusters join the hub the way
// OCM's users join them, with OCM's own registration controller, add-on manager, registration
// agents and work agents. Every managed cluster runs kube-controller-manager, kube-scheduler
// and kwok (which plays kubelet for nodes with GPUs, AVX-512 and QuickAssist, some of them
// nearly full); fleetfit-agent is installed as the OCM add-on fleetfit-agent and enabled with
// the fleetfit CLI, and runs as the pod OCM's work agent deploys would, with the hub
// credentials OCM's registration agent issued it; the hub runs fleetfit-hub. The demo applies
// EMCO's HPA usage example and two more HPAIntents, waits until fleetfit-hub has placed them
// and their pods run, gives cluster1 and cluster2 MachineGroups (a guest takes one of
// cluster1's reserved machines, and the hub places an intent for two machines of a type where
// two are free), shows the result with the fleetfit CLI, the add-ons and the hardware facts
// the agents keep as ClusterClaims, and leaves the fleet running for kubectl and bin/fleetfit
// until it is stopped.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// Options configure the demo.
type Options struct {
	// Dir receives a kubeconfig per cluster (hub.kubeconfig, cluster1.kubeconfig, ...), removed
	// again when the demo stops.
	Dir string
	// SettleTimeout bounds each wait for the fleet: for the agents' first reports, for the
	// decisions and for the delivered pods to run. Zero means DefaultSettleTimeout.
	SettleTimeout time.Duration
}

// DefaultSettleTimeout is generous: a 2-core machine runs some twenty processes here.
const DefaultSettleTimeout = 3 * time.Minute

// agentMinInterval lets the agents report a change within a second, and agentClaimsInterval
// update their ClusterClaims within seconds rather than the default 30s, so that the demo
// does not wait for the claims after its last nodes join.
const (
	agentMinInterval    = time.Second
	agentClaimsInterval = 5 * time.Second
)

// Run starts the fleet, applies the examples, waits until they are placed and their pods
// run, prints what happened and how to reach the clusters, calls ready (when not nil) and
// keeps the fleet up until ctx ends; then every process is stopped and every file removed.
// When the examples do not settle in time it says so and goes on, so that the fleet can be
// looked at; it returns an error only when the fleet cannot be started.
func Run(ctx context.Context, o Options, out io.Writer, ready func(*framework.Fleet)) error {
	if o.SettleTimeout <= 0 {
		o.SettleTimeout = DefaultSettleTimeout
	}
	con := newConsole(out)
	layout := Layout()
	examples := Examples()

	con.step("Starting a hub and %d managed clusters (etcd and kube-apiserver each, on loopback)", len(layout))
	fleet, err := framework.StartFleet(ctx, len(layout), framework.Options{ServiceAccountAdmission: true})
	if err != nil {
		return err
	}
	defer func() {
		con.step("Stopping the fleet: every process, then its files")
		fleet.Stop()
		con.step("Stopped")
	}()
	kubeconfigs, err := writeKubeconfigs(fleet, o.Dir)
	defer func() {
		for _, path := range kubeconfigs {
			_ = os.Remove(path)
		}
	}()
	if err != nil {
		return err
	}

	// The clusters join while their nodes come up: neither waits for the other. The add-on
	// is enabled only once both are done, so that its Deployment finds nodes to run on.
	var wg sync.WaitGroup
	errs := make([]error, len(layout)+1)
	con.step("Joining the managed clusters to the hub with OCM's registration (controller, add-on manager, CSR signer, an agent per cluster)")
	wg.Go(func() { errs[len(layout)] = joinClusters(ctx, con, fleet) })
	for i := range layout {
		wg.Go(func() { errs[i] = startCluster(ctx, con, fleet.Spokes[i], layout[i], o.SettleTimeout) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := bindClusterSet(ctx, fleet); err != nil {
		return err
	}
	hubKubeconfig := kubeconfigs[0]
	if err := installAddOn(ctx, con, fleet, hubKubeconfig); err != nil {
		return err
	}
	if err := startAddOnAgents(ctx, con, fleet, o.SettleTimeout); err != nil {
		return err
	}
	if err := waitReports(ctx, fleet, layout, o.SettleTimeout); err != nil {
		return err
	}
	con.step("The agents have reported every cluster's nodes and pods to the hub")

	hub, err := framework.StartHubProcess(ctx, fleet.Hub)
	if err != nil {
		return err
	}
	con.step("fleetfit-hub started (explain, dry-run and metrics on https://%s)", hub.Addr())
	if err := applyExamples(ctx, fleet, examples); err != nil {
		return err
	}
	con.step("Applied EMCO's usage example (HPAIntents fwall, analytics) and training, inference, each with its Placement, in namespace %s", Namespace)

	decided, err := waitDecided(ctx, fleet, examples, o.SettleTimeout)
	if err != nil {
		con.step("Not all placements were decided: %v", err)
	} else {
		con.step("fleetfit-hub decided: %s", decided)
		if err := waitPodsRunning(ctx, fleet, examples, o.SettleTimeout); err != nil {
			con.step("Not all delivered pods run: %v", err)
		} else {
			con.step("Every delivered pod is Running")
		}
	}
	if err := showMachineGroups(ctx, con, fleet, examples, o.SettleTimeout); err != nil {
		con.step("The machine groups did not settle: %v", err)
	}
	if err := showSplit(ctx, con, fleet, o.SettleTimeout); err != nil {
		con.step("HPAIntent web's replicas were not all placed and Running: %v", err)
	}
	if err := waitReportsCurrent(ctx, fleet, o.SettleTimeout); err != nil {
		con.step("The agents' reports are behind the clusters: %v", err)
	} else {
		con.step("The agents have reported every pod the clusters run")
	}
	if err := waitClaims(ctx, fleet, o.SettleTimeout); err != nil {
		con.step("The clusters' ClusterClaims are behind their nodes: %v", err)
	} else {
		con.step("OCM's registration agents report the ClusterClaims fleetfit-agent keeps, with every cluster's nodes")
	}
	if ctx.Err() != nil {
		return nil
	}

	con.fleetfit(ctx, hubKubeconfig, "get", "clusters")
	if err := printAddOns(ctx, con, fleet); err != nil {
		con.step("Listing the add-ons: %v", err)
	}
	if err := printClaims(ctx, con, fleet, layout[0].Name); err != nil {
		con.step("Listing the ClusterClaims of %s: %v", layout[0].Name, err)
	}
	con.fleetfit(ctx, hubKubeconfig, "get", "placements", "-A")
	con.fleetfit(ctx, hubKubeconfig, "explain", "placement", ut.FwallName, "-n", Namespace)
	con.fleetfit(ctx, hubKubeconfig, "get", "machinetypes", "-A")
	con.fleetfit(ctx, hubKubeconfig, "explain", "placement", "render", "-n", Namespace)
	if err := printPods(ctx, con, fleet, layout); err != nil {
		con.step("Listing the delivered pods: %v", err)
	}
	if err := printAccess(con, fleet, kubeconfigs); err != nil {
		return err
	}
	if ready != nil {
		ready(fleet)
	}
	<-ctx.Done()
	return nil
}

// writeKubeconfigs writes an admin kubeconfig per cluster into dir, the hub's first, and
// returns their paths, also those written before an error.
func writeKubeconfigs(f *framework.Fleet, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, cp := range append([]*framework.ControlPlane{f.Hub}, f.Spokes...) {
		raw, err := framework.Kubeconfig(cp.AdminConfig(), cp.Name)
		if err != nil {
			return paths, err
		}
		path := filepath.Join(dir, cp.Name+".kubeconfig")
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// startCluster makes a spoke run pods, creates its nodes and the pods already running there,
// and lets the demo's HPAIntents deliver into the namespace Namespace there.
func startCluster(ctx context.Context, con *console, spoke *framework.ControlPlane, l ClusterLayout, timeout time.Duration) error {
	if _, err := framework.StartPodRuntime(ctx, spoke); err != nil {
		return err
	}
	con.step("%s: kube-controller-manager, kube-scheduler and kwok started", l.Name)
	client := spoke.AdminClient()
	var names []string
	for _, n := range l.Nodes {
		if _, err := framework.CreateKwokNode(ctx, client, n); err != nil {
			return err
		}
		names = append(names, n.Name+" ("+nodeHardware(n)+")")
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, n := range l.Nodes {
			got, err := client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil || framework.NodeSchedulable(got) != nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s: waiting for its nodes to be Ready: %w", l.Name, err)
	}
	con.step("%s: nodes Ready: %s", l.Name, strings.Join(names, ", "))
	if err := createPods(ctx, client, l.Pods, timeout); err != nil {
		return fmt.Errorf("%s: %w", l.Name, err)
	}
	return framework.GrantDelivery(ctx, spoke, Namespace)
}

// createPods creates the pods already running on a cluster, in PodNamespace. The namespace's
// default ServiceAccount, which the ServiceAccount admission requires, comes from the
// controller manager a moment after the namespace.
func createPods(ctx context.Context, client kubernetes.Interface, pods []*corev1.Pod, timeout time.Duration) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PodNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, p := range pods {
		var last error
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
			_, last = client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
			return last == nil || apierrors.IsAlreadyExists(last), nil
		})
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w (last: %v)", p.Namespace, p.Name, err, last)
		}
	}
	return nil
}

// waitReports waits until every cluster's ClusterInventory on the hub shows all its nodes
// Ready and the resources its pods request — the add-on's own pod among them — as
// pkg/inventory sums them from the spoke's Nodes and Pods.
func waitReports(ctx context.Context, f *framework.Fleet, layout []ClusterLayout, timeout time.Duration) error {
	invs := fleetfitclient.NewForConfigOrDie(f.Hub.AdminConfig()).FleetfitV1alpha1()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = nil
		for _, l := range layout {
			inv, err := invs.ClusterInventories(l.Name).Get(ctx, l.Name, metav1.GetOptions{})
			if err != nil {
				last = err
				return false, nil
			}
			if got, want := inv.Status.ReadyNodeCount, int32(len(l.Nodes)); got != want {
				last = fmt.Errorf("%s reports %d Ready nodes, not %d yet", l.Name, got, want)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the agents' reports: %w (last: %v)", err, last)
	}
	return waitReportsCurrent(ctx, f, timeout)
}
