package framework

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
)

// Controllers is what StartKubeControllerManager runs by default: the
// controllers that turn workloads into pods and clean up after them, the
// ones that give every namespace its ServiceAccount and root CA, and the node
// lifecycle controller, which removes the not-ready taint from new nodes once
// they are Ready and keeps an eye on their Leases, and the resource claim
// controller, which makes the ResourceClaims of pods that claim DRA devices
// from a template. Nothing that needs a cloud, volumes or certificates signing.
var Controllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"job-controller",
	"cronjob-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"node-lifecycle-controller",
	"pod-garbage-collector-controller",
	// Dynamic Resource Allocation: the ResourceClaims of pods, made from their templates.
	"resourceclaim-controller",
}

// StartKubeControllerManager runs kube-controller-manager against cp as its
// admin, with the given controllers (Controllers when none):
//
//	kube-controller-manager --kubeconfig=<cp> --leader-elect=false \
//	    --controllers=<controllers> \
//	    --service-account-private-key-file=<cp>/sa.key --root-ca-file=<cp>/ca.crt \
//	    --bind-address=127.0.0.1 --secure-port=<port>
//
// and waits until it serves /healthz. The control plane's ServiceAccount
// admission (Options.ServiceAccountAdmission) needs the ServiceAccount
// controllers: with it, a pod is refused until its namespace has a default
// ServiceAccount. The caller stops the process with Stop, or leaves that to
// cp.Stop.
func StartKubeControllerManager(ctx context.Context, cp *ControlPlane, controllers ...string) (*Component, error) {
	if len(controllers) == 0 {
		controllers = Controllers
	}
	return startComponent(ctx, componentSpec{
		binary: "kube-controller-manager",
		name:   "kube-controller-manager",
		home:   cp,
		planes: []*ControlPlane{cp},
		args: func(dir, addr string) ([]string, error) {
			kubeconfig, err := writeKubeconfig(cp, dir, "kubeconfig")
			if err != nil {
				return nil, err
			}
			return append(kubeArgs(kubeconfig, dir, addr),
				"--controllers="+strings.Join(controllers, ","),
				"--service-account-private-key-file="+cp.path("sa.key"),
				"--root-ca-file="+cp.path("ca.crt"),
				"--kube-api-qps=100",
				"--kube-api-burst=200",
			), nil
		},
		ready: healthz("https://%s/healthz"),
	})
}

// StartKubeScheduler runs kube-scheduler, with its default profile, against
// cp as its admin:
//
//	kube-scheduler --kubeconfig=<cp> --leader-elect=false \
//	    --bind-address=127.0.0.1 --secure-port=<port>
//
// and waits until it serves /healthz. The caller stops it with Stop, or
// leaves that to cp.Stop.
func StartKubeScheduler(ctx context.Context, cp *ControlPlane) (*Component, error) {
	return startComponent(ctx, componentSpec{
		binary: "kube-scheduler",
		name:   "kube-scheduler",
		home:   cp,
		planes: []*ControlPlane{cp},
		args: func(dir, addr string) ([]string, error) {
			kubeconfig, err := writeKubeconfig(cp, dir, "kubeconfig")
			if err != nil {
				return nil, err
			}
			return append(kubeArgs(kubeconfig, dir, addr), "--kube-api-qps=100", "--kube-api-burst=200"), nil
		},
		ready: healthz("https://%s/healthz"),
	})
}

// kubeArgs are the flags kube-controller-manager and kube-scheduler share
// here: the admin's kubeconfig, no leader election, HTTPS on addr with a
// certificate made in dir. Their HTTPS port authenticates no one (there is
// no --authentication-kubeconfig) and serves only what needs no
// authorisation, /healthz among it: it is for the readiness check.
func kubeArgs(kubeconfig, dir, addr string) []string {
	host, port, _ := net.SplitHostPort(addr)
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--bind-address=" + host,
		"--secure-port=" + port,
		"--cert-dir=" + dir,
		"--v=1",
	}
}

// PodRuntime is what makes a control plane run pods as a cluster does, all
// of it processes built by `make tools`: kube-controller-manager turns
// workloads into pods, kube-scheduler binds them to nodes, and kwok plays
// kubelet for the nodes made with CreateKwokNode.
type PodRuntime struct {
	ControllerManager *Component
	Scheduler         *Component
	Kwok              *Component
}

// StartPodRuntime starts kube-controller-manager (with Controllers),
// kube-scheduler and kwok against cp, concurrently, and waits until each is
// up. On error, whatever was started is stopped again. They stop with cp,
// or with Stop.
func StartPodRuntime(ctx context.Context, cp *ControlPlane) (*PodRuntime, error) {
	r := &PodRuntime{}
	var (
		wg                    sync.WaitGroup
		kcmErr, schErr, kwErr error
	)
	wg.Go(func() { r.ControllerManager, kcmErr = StartKubeControllerManager(ctx, cp) })
	wg.Go(func() { r.Scheduler, schErr = StartKubeScheduler(ctx, cp) })
	wg.Go(func() { r.Kwok, kwErr = StartKwok(ctx, cp) })
	wg.Wait()
	if err := errors.Join(kcmErr, schErr, kwErr); err != nil {
		r.Stop()
		return nil, err
	}
	return r, nil
}

// Stop stops the three processes.
func (r *PodRuntime) Stop() {
	for _, c := range []*Component{r.ControllerManager, r.Scheduler, r.Kwok} {
		if c != nil {
			c.Stop()
		}
	}
}

// LogTails returns the end of each process's log, to explain a failure.
func (r *PodRuntime) LogTails(lines int) string {
	var b strings.Builder
	for _, c := range []*Component{r.ControllerManager, r.Scheduler, r.Kwok} {
		if c != nil {
			b.WriteString("--- " + c.Name() + " ---\n" + c.LogTail(lines) + "\n")
		}
	}
	return b.String()
}
