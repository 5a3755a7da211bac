package framework

import (
	"context"
	"os"
	"path/filepath"
)

// OCMProcess is one of Open Cluster Management's own components — the
// placement controller or a work agent, built by `make tools` from
// open-cluster-management.io/ocm — running as a process against control
// planes of a fleet.
type OCMProcess = Component

// StartOCMPlacement runs OCM's placement controller against hub as its
// admin, and waits until the process serves its health endpoint:
//
//	placement controller --kubeconfig=<hub> --namespace=default \
//	    --disable-leader-election --listen=127.0.0.1:<port>
//
// extraArgs are appended (for example --kube-api-qps). The caller stops it with Stop, or
// leaves that to hub.Stop.
func StartOCMPlacement(ctx context.Context, hub *ControlPlane, extraArgs ...string) (*OCMProcess, error) {
	return startOCM(ctx, "placement", "OCM placement", hub, []*ControlPlane{hub}, func(dir string) ([]string, error) {
		kubeconfig, err := writeKubeconfig(hub, dir, "hub.kubeconfig")
		if err != nil {
			return nil, err
		}
		return append([]string{
			"controller",
			"--kubeconfig=" + kubeconfig,
		}, extraArgs...), nil
	})
}

// StartOCMWorkAgent runs OCM's work agent for the managed cluster
// clusterName: it applies the ManifestWorks in namespace clusterName of hub
// to spoke, as admin on both. It waits until the process serves its health
// endpoint:
//
//	work agent --spoke-cluster-name=<clusterName> \
//	    --workload-source-config=<hub kubeconfig> --kubeconfig=<spoke kubeconfig> \
//	    --namespace=default --disable-leader-election --listen=127.0.0.1:<port>
//
// (--workload-source-config, not --hub-kubeconfig, is where the work agent
// reads ManifestWorks from.) The hub needs the ManifestWork CRD and the spoke
// the AppliedManifestWork CRD, which StartFleet installs. The caller stops
// the agent with Stop, or leaves that to hub.Stop or spoke.Stop.
func StartOCMWorkAgent(ctx context.Context, hub, spoke *ControlPlane, clusterName string) (*OCMProcess, error) {
	return startOCMWorkAgent(ctx, hub, spoke, clusterName, func(dir string) (string, error) {
		return writeKubeconfig(hub, dir, "hub.kubeconfig")
	})
}

// StartOCMWorkAgentAs is StartOCMWorkAgent with the hub identity of the
// kubeconfig file hubKubeconfig instead of the hub's admin: as a klusterlet
// runs it, with the kubeconfig its registration agent keeps (see
// RegistrationAgent.HubKubeconfig), whose client certificate the work agent
// reloads when the registration agent rotates it. OCM's registration
// controller grants that identity the ManifestWorks of its cluster's
// namespace.
func StartOCMWorkAgentAs(ctx context.Context, hub, spoke *ControlPlane, clusterName, hubKubeconfig string) (*OCMProcess, error) {
	return startOCMWorkAgent(ctx, hub, spoke, clusterName, func(string) (string, error) { return hubKubeconfig, nil })
}

func startOCMWorkAgent(ctx context.Context, hub, spoke *ControlPlane, clusterName string, hubKubeconfig func(dir string) (string, error)) (*OCMProcess, error) {
	return startOCM(ctx, "work", "OCM work", spoke, []*ControlPlane{hub, spoke}, func(dir string) ([]string, error) {
		hubKubeconfig, err := hubKubeconfig(dir)
		if err != nil {
			return nil, err
		}
		spokeKubeconfig, err := writeKubeconfig(spoke, dir, "spoke.kubeconfig")
		if err != nil {
			return nil, err
		}
		return []string{
			"agent",
			"--spoke-cluster-name=" + clusterName,
			"--workload-source-config=" + hubKubeconfig,
			"--kubeconfig=" + spokeKubeconfig,
		}, nil
	})
}

// startOCM starts binary, named name, in a new directory under home.Dir(), attached to
// planes, with the arguments args returns plus those every OCM component
// takes here: events go to the default namespace (which exists), there is
// no leader election, and the component's HTTPS health and metrics server
// listens on a free loopback port instead of 0.0.0.0:8443. It waits until
// the process serves its health endpoint.
func startOCM(ctx context.Context, binary, name string, home *ControlPlane, planes []*ControlPlane, args func(dir string) ([]string, error)) (*OCMProcess, error) {
	return startComponent(ctx, componentSpec{
		binary: binary,
		name:   name,
		home:   home,
		planes: planes,
		args: func(dir, addr string) ([]string, error) {
			argv, err := args(dir)
			if err != nil {
				return nil, err
			}
			return append(argv,
				"--namespace=default",
				"--disable-leader-election",
				"--listen="+addr,
			), nil
		},
		// The health endpoint is unauthenticated.
		ready: healthz("https://%s/healthz"),
	})
}

// writeKubeconfig writes an admin kubeconfig of cp into dir.
func writeKubeconfig(cp *ControlPlane, dir, name string) (string, error) {
	b, err := Kubeconfig(cp.AdminConfig(), cp.Name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, b, 0o600)
}
