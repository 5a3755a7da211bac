package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// OCMProcess is one of Open Cluster Management's own components — the
// placement controller or a work agent, built by `make tools` from
// open-cluster-management.io/ocm — running as a process against control
// planes of a fleet. Its kubeconfigs, log and temporary files live in a
// directory inside a control plane's Dir. It is stopped by Stop, or with
// the first of its control planes to stop (and so by StopAll and
// MainWithFleet), or by the kernel when the test binary dies.
type OCMProcess struct {
	name     string
	dir      string
	proc     *process
	planes   []*ControlPlane
	stopOnce sync.Once
}

// StartOCMPlacement runs OCM's placement controller against hub as its
// admin, and waits until the process serves its health endpoint:
//
//	placement controller --kubeconfig=<hub> --namespace=default \
//	    --disable-leader-election --listen=127.0.0.1:<port>
//
// extraArgs are appended (for example --kube-api-qps). The caller stops it with Stop, or
// leaves that to hub.Stop.
func StartOCMPlacement(ctx context.Context, hub *ControlPlane, extraArgs ...string) (*OCMProcess, error) {
	return startOCM(ctx, "placement", hub, []*ControlPlane{hub}, func(dir string) ([]string, error) {
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
	return startOCM(ctx, "work", spoke, []*ControlPlane{hub, spoke}, func(dir string) ([]string, error) {
		hubKubeconfig, err := writeKubeconfig(hub, dir, "hub.kubeconfig")
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

// startOCM starts binary in a new directory under home.Dir(), attached to
// planes, with the arguments args returns plus those every OCM component
// takes here: events go to the default namespace (which exists), there is
// no leader election, and the component's HTTPS health and metrics server
// listens on a free loopback port instead of 0.0.0.0:8443.
func startOCM(ctx context.Context, binary string, home *ControlPlane, planes []*ControlPlane, args func(dir string) ([]string, error)) (*OCMProcess, error) {
	bin, err := BinaryPath(binary)
	if err != nil {
		return nil, err
	}
	var errs []error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		o, err := startOCMOnce(ctx, binary, bin, home, planes, args)
		if err == nil {
			return o, nil
		}
		errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
		// Only a lost race for a port is worth another attempt.
		if !strings.Contains(err.Error(), "address already in use") || ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("starting OCM %s against %s: %w", binary, home.Name, errors.Join(errs...))
}

func startOCMOnce(ctx context.Context, name, bin string, home *ControlPlane, planes []*ControlPlane, args func(dir string) ([]string, error)) (o *OCMProcess, err error) {
	dir, err := os.MkdirTemp(home.Dir(), "ocm-"+name+"-")
	if err != nil {
		return nil, err
	}
	// The serving certificate OCM generates for itself goes to $TMPDIR.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	argv, err := args(dir)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	argv = append(argv,
		"--namespace=default",
		"--disable-leader-election",
		"--listen="+addr,
	)
	o = &OCMProcess{name: "OCM " + name, dir: dir, planes: planes}
	o.proc, err = startProcessEnv(o.name, filepath.Join(dir, name+".log"), []string{"TMPDIR=" + tmp}, bin, argv...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			o.Stop()
		}
	}()
	for _, cp := range planes {
		if err := cp.attach(o); err != nil {
			return nil, err
		}
	}
	// The health endpoint is unauthenticated and the certificate OCM made
	// for itself trusted by nothing: this only checks that the process is up.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer client.CloseIdleConnections()
	if err := waitHTTP(ctx, o.proc, client, "https://"+addr+"/healthz"); err != nil {
		return nil, fmt.Errorf("%s not healthy: %w\n%s", o.name, err, o.proc.logTail(30))
	}
	return o, nil
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

// Dir is the directory with the process's kubeconfigs and log; it is
// removed with the control plane that holds it.
func (o *OCMProcess) Dir() string { return o.dir }

// LogTail returns the end of the process's log, to explain a failure.
func (o *OCMProcess) LogTail(lines int) string { return o.proc.logTail(lines) }

// Stop terminates the process (killing it after StopGrace). It is safe to
// call more than once and from several goroutines.
func (o *OCMProcess) Stop() {
	o.stopOnce.Do(func() {
		o.proc.stop(StopGrace)
		for _, cp := range o.planes {
			cp.detach(o)
		}
	})
}
