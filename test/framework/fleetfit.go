package framework

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deployagent "github.com/fleetfit/fleetfit/deploy/agent"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
)

// StartHubProcess runs bin/fleetfit-hub (from `make build`) against hub as
// its admin:
//
//	fleetfit-hub --kubeconfig=<hub> --leader-elect=false \
//	    --bind-address=127.0.0.1 --secure-port=<port> --cert-dir=<dir> <args>
//
// and waits until its HTTPS endpoint (explain, dry-run, metrics) answers
// /healthz at the returned component's Addr. The caller stops it with Stop,
// or leaves that to hub.Stop. RunHub runs the same command in-process.
func StartHubProcess(ctx context.Context, hub *ControlPlane, args ...string) (*Component, error) {
	return startComponent(ctx, componentSpec{
		binary: "fleetfit-hub",
		name:   "fleetfit-hub",
		home:   hub,
		planes: []*ControlPlane{hub},
		args: func(dir, addr string) ([]string, error) {
			kubeconfig, err := writeKubeconfig(hub, dir, "hub.kubeconfig")
			if err != nil {
				return nil, err
			}
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			return append([]string{
				"--kubeconfig=" + kubeconfig,
				"--leader-elect=false",
				"--bind-address=" + host,
				"--secure-port=" + port,
				"--cert-dir=" + dir,
			}, args...), nil
		},
		ready: healthz("https://%s/healthz"),
	})
}

// StartAgentProcess runs bin/fleetfit-agent (from `make build`) for the
// managed cluster cluster, with the identities deploy/agent grants (see
// ApplyAgentRBAC, which must have been applied): on the spoke the agent's
// ServiceAccount, on the hub the user AgentUser(cluster):
//
//	fleetfit-agent --cluster-name=<cluster> --kubeconfig=<spoke> \
//	    --hub-kubeconfig=<hub> --min-interval=<minInterval> \
//	    --injector-bind-address=<addr> --injector-cert-hostnames=<host> <args>
//
// with the spoke's webhook configuration for the pod resource injector
// pointed at addr (RegisterInjector). It waits until the agent has written its first report, the cluster's
// ClusterInventory on the hub. The caller stops it with Stop, or leaves that
// to hub.Stop or spoke.Stop. StartAgent runs the same reporter in-process.
func StartAgentProcess(ctx context.Context, hub, spoke *ControlPlane, cluster string, minInterval time.Duration, args ...string) (*Component, error) {
	return startComponent(ctx, componentSpec{
		binary: "fleetfit-agent",
		name:   "fleetfit-agent " + cluster,
		home:   spoke,
		planes: []*ControlPlane{hub, spoke},
		args: func(dir, addr string) ([]string, error) {
			// The agent's pod resource injector serves on addr, where the
			// spoke's API server calls it (on loopback, by URL).
			if err := RegisterInjector(ctx, spoke, addr); err != nil {
				return nil, err
			}
			spokeKubeconfig, err := writeUserKubeconfig(spoke, dir, "spoke.kubeconfig", agentServiceAccount, "system:serviceaccounts")
			if err != nil {
				return nil, err
			}
			hubKubeconfig, err := writeUserKubeconfig(hub, dir, "hub.kubeconfig", deployagent.AgentUser(cluster))
			if err != nil {
				return nil, err
			}
			return append([]string{
				"--cluster-name=" + cluster,
				"--kubeconfig=" + spokeKubeconfig,
				"--hub-kubeconfig=" + hubKubeconfig,
				"--min-interval=" + minInterval.String(),
				"--injector-bind-address=" + addr,
				"--injector-cert-hostnames=" + strings.Split(addr, ":")[0],
			}, args...), nil
		},
		ready: inventoryReported(hub, cluster),
	})
}

// inventoryReported is the readiness check of an agent: cluster's ClusterInventory on hub
// holds a report.
func inventoryReported(hub *ControlPlane, cluster string) func(ctx context.Context, _ string) error {
	inventories := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(cluster)
	return func(ctx context.Context, _ string) error {
		inv, err := inventories.Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if inv.Status.ObservedAt.IsZero() {
			return errors.New("the ClusterInventory has no report yet")
		}
		return nil
	}
}

// agentServiceAccount is the spoke identity deploy/agent's RBAC grants.
const agentServiceAccount = "system:serviceaccount:fleetfit-agent:fleetfit-agent"
