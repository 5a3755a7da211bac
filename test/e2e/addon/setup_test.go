package addon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/install"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

const (
	// ns holds the Placements and the HPAIntent on the hub, and the workload on the spokes.
	ns = "e2e"
	// signingDuration is the validity of every client certificate the hub signs: OCM's
	// registration agents renew theirs, and the add-on's, once less than 20–25 % of
	// (signingDuration + the signer's 5-minute backdating) is left, so about every half
	// minute, and the first certificate an agent got is expired within the test.
	signingDuration = 2 * time.Minute
	// certificateCheck is how often the registration agents look at their certificates;
	// left to themselves they look every 5 minutes, longer than signingDuration.
	certificateCheck = 5 * time.Second
	// settle bounds the waits for the fleet's processes.
	settle = 2 * time.Minute
	// logLines is how much of each process's log a failure shows.
	logLines = 30
	// gpuProduct is the label GPU feature discovery puts on GPU nodes.
	gpuProduct = "nvidia.com/gpu.product"
	// avx512 is Node Feature Discovery's label for the CPU flag.
	avx512 = "feature.node.kubernetes.io/cpu-cpuid.AVX512F"
	// gpu is the device plugin's resource.
	gpu = corev1.ResourceName("nvidia.com/gpu")
)

// nodes are the managed clusters' nodes: cluster1 has an A100 node with 4 GPUs, cluster2 a
// T4 node with 2 and an AVX-512 CPU node.
var nodes = [][]*corev1.Node{
	{
		ut.MakeNode("a100-0").Resource("cpu", "16").Resource("memory", "64Gi").Resource(gpu, "4").Label(gpuProduct, "A100").Obj(),
		ut.MakeNode("cpu-0").Resource("cpu", "32").Resource("memory", "128Gi").Obj(),
	},
	{
		ut.MakeNode("t4-0").Resource("cpu", "16").Resource("memory", "64Gi").Resource(gpu, "2").Label(gpuProduct, "T4").Obj(),
		ut.MakeNode("avx-0").Resource("cpu", "32").Resource("memory", "128Gi").Label(avx512, "true").Obj(),
	},
}

// env is what setup started, shared by the package's tests.
type env struct {
	join *framework.Join
	// agents are the fleetfit agents the add-on deployed, agents[i] on fleet.Spokes[i].
	agents []*framework.Component
	hub    *framework.Component
	// placement is OCM's placement controller, which schedules the Placements fleetfit-hub
	// leaves to it (run with --placements=annotated).
	placement *framework.Component
	runtimes  []*framework.PodRuntime
	// hubKubeconfig is an admin kubeconfig of the hub, for the CLI.
	hubKubeconfig string
	// cli is what the fleetfit CLI printed during setup.
	cli strings.Builder
}

var (
	setupOnce sync.Once
	shared    *env
	setupErr  error
)

// setup brings the fleet up once for the package, as an OCM user would, and returns it; a
// test that cannot have it fails. On failure, every log is shown.
func setup(t *testing.T) *env {
	t.Helper()
	setupOnce.Do(func() {
		shared = &env{}
		setupErr = shared.start(context.Background())
	})
	if setupErr != nil {
		t.Log(shared.logs())
		t.Fatalf("setting up the fleet: %v", setupErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(shared.logs())
		}
	})
	return shared
}

func (e *env) start(ctx context.Context) error {
	hub := fleet.Hub
	// The SIG-Multicluster CRDs, so that OCM's registration keeps a ClusterProfile per cluster.
	sig, err := manifests.SIGMulticlusterCRDs()
	if err != nil {
		return err
	}
	if err := install.ApplyCRDs(ctx, hub.AdminConfig(), sig); err != nil {
		return err
	}
	if e.join, err = fleet.JoinSpokes(ctx, framework.JoinOptions{
		Hub:                    framework.HubOptions{SigningDuration: signingDuration, ClusterProfile: true},
		Agent:                  framework.RegistrationAgentOptions{ReservedClusterClaimSuffixes: []string{"fleetfit.io"}},
		WorkAgents:             true,
		CertificateCheckPeriod: certificateCheck,
	}); err != nil {
		return err
	}
	for i, spoke := range fleet.Spokes {
		runtime, err := framework.StartPodRuntime(ctx, spoke)
		if err != nil {
			return err
		}
		e.runtimes = append(e.runtimes, runtime)
		for _, n := range nodes[i] {
			if _, err := framework.CreateKwokNode(ctx, spoke.AdminClient(), n); err != nil {
				return err
			}
		}
		if err := framework.GrantDelivery(ctx, spoke, ns); err != nil {
			return err
		}
	}
	if err := bindClusterSet(ctx); err != nil {
		return err
	}

	dir, err := os.MkdirTemp(hub.Dir(), "cli-")
	if err != nil {
		return err
	}
	raw, err := framework.Kubeconfig(hub.AdminConfig(), hub.Name)
	if err != nil {
		return err
	}
	e.hubKubeconfig = filepath.Join(dir, "hub.kubeconfig")
	if err := os.WriteFile(e.hubKubeconfig, raw, 0o600); err != nil {
		return err
	}
	// The user's two commands: install the add-on on the hub, enable it on both clusters.
	if err := e.fleetfit(ctx, "install", "addon", "--image", "fleetfit:e2e"); err != nil {
		return err
	}
	if err := e.fleetfit(ctx, "addon", "enable", "--clusters", "cluster1,cluster2"); err != nil {
		return err
	}

	if e.hub, err = framework.StartHubProcess(ctx, hub, "--placements=annotated"); err != nil {
		return err
	}
	if e.placement, err = framework.StartOCMPlacement(ctx, hub); err != nil {
		return err
	}
	e.agents = make([]*framework.Component, len(fleet.Spokes))
	errs := make([]error, len(fleet.Spokes))
	var wg sync.WaitGroup
	for i, spoke := range fleet.Spokes {
		wg.Go(func() {
			e.agents[i], errs[i] = framework.StartAddonAgentProcess(ctx, hub, spoke, framework.SpokeName(i), settle,
				"--min-interval=500ms", "--cluster-claims-interval=2s")
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// bindClusterSet binds the cluster set "default", which OCM's registration keeps and
// JoinSpokes puts the clusters in, to the test's namespace on the hub.
func bindClusterSet(ctx context.Context) error {
	hub := fleet.Hub
	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	_, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(ns).Create(ctx, ut.MakeClusterSetBinding(ns, "default"), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// fleetfit runs bin/fleetfit against the hub, recording what it printed.
func (e *env) fleetfit(ctx context.Context, args ...string) error {
	bin, err := framework.BinaryPath("fleetfit")
	if err != nil {
		return err
	}
	args = append(args, "--kubeconfig", e.hubKubeconfig)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	fmt.Fprintf(&e.cli, "$ fleetfit %s\n%s", strings.Join(args, " "), out)
	if err != nil {
		return fmt.Errorf("fleetfit %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// logs returns the CLI's output and the end of every process's log.
func (e *env) logs() string {
	var b strings.Builder
	b.WriteString(e.cli.String())
	var cs []*framework.Component
	cs = append(cs, e.agents...)
	cs = append(cs, e.hub, e.placement)
	for _, r := range e.runtimes {
		cs = append(cs, r.ControllerManager, r.Kwok)
	}
	for _, c := range cs {
		if c != nil {
			fmt.Fprintf(&b, "--- %s ---\n%s\n", c.Name(), c.LogTail(logLines))
		}
	}
	if e.join != nil {
		b.WriteString(e.join.LogTails(logLines))
	}
	return b.String()
}
