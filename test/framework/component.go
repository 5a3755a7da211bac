package framework

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Component is a program run as a process against control planes of a
// fleet: a Kubernetes component (kube-controller-manager, kube-scheduler),
// kwok, one of OCM's components, or fleetfit's own binaries. Its kubeconfigs,
// log and temporary files live in a directory inside a control plane's Dir.
// It is stopped by Stop, or with the first of its control planes to stop
// (and so by StopAll and MainWithFleet), or by the kernel when the process
// that started it dies.
type Component struct {
	name     string
	dir      string
	addr     string
	proc     *process
	planes   []*ControlPlane
	stopOnce sync.Once
}

// componentSpec says how to run one component.
type componentSpec struct {
	// binary is the program's name in the binary directory (see BinaryPath).
	binary string
	// name names the component in logs, errors and its directory.
	name string
	// home holds the component's directory; planes are the control planes
	// whose Stop stops the component. home must be one of them.
	home   *ControlPlane
	planes []*ControlPlane
	// args returns the command line. dir is the component's directory and
	// addr a free loopback address ("127.0.0.1:<port>") for its server.
	args func(dir, addr string) ([]string, error)
	// envFor returns variables added to the environment, given the
	// component's directory; TMPDIR is always the component's own.
	envFor func(dir string) []string
	// ready returns nil once the component works, and an error when it
	// cannot: it is called repeatedly until then, and not at all when nil.
	ready func(ctx context.Context, addr string) error
}

// startComponent starts a component and waits until it is ready, retrying
// when its port was lost to another program meanwhile.
func startComponent(ctx context.Context, spec componentSpec) (*Component, error) {
	bin, err := BinaryPath(spec.binary)
	if err != nil {
		return nil, err
	}
	c, err := retryOnPortLoss(ctx, func() (*Component, error) { return startComponentOnce(ctx, bin, spec) })
	if err != nil {
		return nil, fmt.Errorf("starting %s against %s: %w", spec.name, spec.home.Name, err)
	}
	return c, nil
}

// retryOnPortLoss calls start up to startAttempts times while it fails
// because a port handed out by freePort was taken by another program in the
// meantime; any other error is final. The errors of all attempts are joined.
func retryOnPortLoss[T any](ctx context.Context, start func() (T, error)) (T, error) {
	var errs []error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		v, err := start()
		if err == nil {
			return v, nil
		}
		errs = append(errs, fmt.Errorf("attempt %d: %w", attempt, err))
		if !strings.Contains(err.Error(), "address already in use") || ctx.Err() != nil {
			break
		}
	}
	var zero T
	return zero, errors.Join(errs...)
}

func startComponentOnce(ctx context.Context, bin string, spec componentSpec) (c *Component, err error) {
	dir, err := os.MkdirTemp(spec.home.Dir(), strings.ToLower(strings.ReplaceAll(spec.name, " ", "-"))+"-")
	if err != nil {
		return nil, err
	}
	// Self-signed serving certificates and other scratch files go to $TMPDIR.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	argv, err := spec.args(dir, addr)
	if err != nil {
		return nil, err
	}
	c = &Component{name: spec.name, dir: dir, addr: addr, planes: spec.planes}
	env := []string{"TMPDIR=" + tmp}
	if spec.envFor != nil {
		env = append(env, spec.envFor(dir)...)
	}
	c.proc, err = startProcessEnv(spec.name, filepath.Join(dir, spec.binary+".log"), env, bin, argv...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for _, cp := range spec.planes {
		if err := cp.attach(c); err != nil {
			return nil, err
		}
	}
	if spec.ready == nil {
		return c, nil
	}
	if err := waitReady(ctx, c.proc, func(ctx context.Context) error { return spec.ready(ctx, addr) }); err != nil {
		return nil, fmt.Errorf("%s not ready: %w\n%s", spec.name, err, c.proc.logTail(30))
	}
	return c, nil
}

// waitReady polls ready until it returns nil, the process exits, or
// StartTimeout passes. A port lost to another program shows in the log, not
// in the error: it is added to the error then, so that the caller retries.
func waitReady(ctx context.Context, p *process, ready func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, StartTimeout, true, func(ctx context.Context) (bool, error) {
		if done, werr := p.exited(); done {
			return false, fmt.Errorf("%s exited: %v", p.name, werr)
		}
		last = ready(ctx)
		return last == nil, nil
	})
	if err == nil {
		return nil
	}
	if last != nil {
		err = fmt.Errorf("%w (last: %v)", err, last)
	}
	if strings.Contains(p.logTail(50), "address already in use") {
		err = fmt.Errorf("%w: address already in use", err)
	}
	return err
}

// healthz returns a ready function that GETs url (with %s replaced by the
// component's address) until it answers 200. The certificate a component
// made for itself is trusted by nothing, so it is not verified: this only
// checks that the process is up and serving.
func healthz(url string) func(ctx context.Context, addr string) error {
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
	}
	return func(ctx context.Context, addr string) error {
		return getOK(ctx, client, strings.ReplaceAll(url, "%s", addr))
	}
}

// getOK GETs url and returns nil when it answers 200.
func getOK(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	return nil
}

// Name is the component's name, as in its log file and errors.
func (c *Component) Name() string { return c.name }

// Dir is the directory with the component's kubeconfigs and log; it is
// removed with the control plane that holds it.
func (c *Component) Dir() string { return c.dir }

// Addr is the loopback address ("127.0.0.1:<port>") the component was told
// to serve on, if it serves anything.
func (c *Component) Addr() string { return c.addr }

// LogTail returns the end of the component's log, to explain a failure.
func (c *Component) LogTail(lines int) string { return c.proc.logTail(lines) }

// Exited reports whether the process has stopped, and why.
func (c *Component) Exited() (bool, error) { return c.proc.exited() }

// Stop terminates the process (killing it after StopGrace). It is safe to
// call more than once and from several goroutines.
func (c *Component) Stop() {
	c.stopOnce.Do(func() {
		c.proc.stop(StopGrace)
		for _, cp := range c.planes {
			cp.detach(c)
		}
	})
}

// writeUserKubeconfig writes a kubeconfig of cp for userName in groups into
// dir.
func writeUserKubeconfig(cp *ControlPlane, dir, name, userName string, groups ...string) (string, error) {
	cfg, err := cp.UserConfig(userName, groups...)
	if err != nil {
		return "", err
	}
	b, err := Kubeconfig(cfg, cp.Name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	return path, os.WriteFile(path, b, 0o600)
}

// Usage is what a component's process has used so far: its peak resident memory and the CPU
// time it has spent, in user and system mode, as the kernel counts them.
type Usage struct {
	PeakRSS int64 // bytes
	CPU     time.Duration
}

// Usage reads the component's usage from /proc (Linux only). It fails once the process has
// exited.
func (c *Component) Usage() (Usage, error) { return c.proc.usage() }

// Usage reads what the control plane's kube-apiserver and etcd processes have used so far,
// together (peak RSS is the sum of their peaks).
func (cp *ControlPlane) Usage() (Usage, error) {
	var total Usage
	for _, p := range []*process{cp.apiserver, cp.etcd} {
		u, err := p.usage()
		if err != nil {
			return Usage{}, err
		}
		total.PeakRSS += u.PeakRSS
		total.CPU += u.CPU
	}
	return total, nil
}

func (p *process) usage() (Usage, error) {
	pid := p.cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	var u Usage
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return Usage{}, fmt.Errorf("/proc/%d/status: %q: %w", pid, line, err)
			}
			u.PeakRSS = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	// Fields after the command name, which is in parentheses and may hold spaces: utime and
	// stime are the 12th and 13th of them, in clock ticks (100 per second on Linux).
	_, after, ok := strings.Cut(string(stat), ") ")
	fields := strings.Fields(after)
	if !ok || len(fields) < 13 {
		return Usage{}, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, stat)
	}
	for _, f := range fields[11:13] {
		ticks, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		u.CPU += time.Duration(ticks) * (time.Second / 100)
	}
	return u, nil
}
