package framework

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Faults a test injects into running processes: an API server or etcd that
// stops answering (SIGSTOP) and answers again (SIGCONT), a component killed
// without a chance to clean up (SIGKILL), and a component started again with
// its command line, environment, directory and address unchanged, as a
// Deployment restarts a crashed container.

// KillTimeout bounds how long a killed process may take to be reaped.
const KillTimeout = 10 * time.Second

// PauseAPIServer stops the control plane's kube-apiserver process (SIGSTOP):
// connections are still accepted by the kernel but nothing answers, as with
// an API server that hangs or a network that drops everything. ResumeAPIServer
// undoes it. A paused process still dies on Stop (by SIGKILL, after StopGrace),
// but the caller should resume it in a cleanup so that Stop is quick.
func (cp *ControlPlane) PauseAPIServer() error { return signalGroup(cp.apiserver, syscall.SIGSTOP) }

// ResumeAPIServer lets a paused kube-apiserver run again (SIGCONT).
func (cp *ControlPlane) ResumeAPIServer() error { return signalGroup(cp.apiserver, syscall.SIGCONT) }

// PauseEtcd stops the control plane's etcd (SIGSTOP): the API server still
// answers what its watch cache holds, and every write times out.
func (cp *ControlPlane) PauseEtcd() error { return signalGroup(cp.etcd, syscall.SIGSTOP) }

// ResumeEtcd lets a paused etcd run again (SIGCONT).
func (cp *ControlPlane) ResumeEtcd() error { return signalGroup(cp.etcd, syscall.SIGCONT) }

// signalGroup sends sig to the process's group (the process and any child it
// started), once it runs.
func signalGroup(p *process, sig syscall.Signal) error {
	if p == nil {
		return errors.New("the process was never started")
	}
	if done, err := p.exited(); done {
		return fmt.Errorf("%s has exited (%v): cannot send it %v", p.name, err, sig)
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("sending %v to %s: %w", sig, p.name, err)
	}
	return nil
}

// Kill kills the component's process group with SIGKILL, giving it no chance
// to release a lease or finish a write, and waits until it is reaped. The
// component stays attached to its control planes: Restart starts it again,
// and Stop (or the control plane's) still cleans up.
func (c *Component) Kill() error {
	if done, _ := c.proc.exited(); done {
		return nil
	}
	if err := signalGroup(c.proc, syscall.SIGKILL); err != nil {
		return err
	}
	select {
	case <-c.proc.done:
		return nil
	case <-time.After(KillTimeout):
		return fmt.Errorf("%s still runs %v after SIGKILL", c.name, KillTimeout)
	}
}

// Restart starts the component again, after Kill or after it exited on its
// own, with the same program, arguments, environment, directory and address,
// and waits until ready returns nil (nil: not at all). The previous log is
// kept beside the new one, with the suffix ".<n>" (1 for the first run), so a
// failure can be explained from both runs.
func (c *Component) Restart(ctx context.Context, ready func(ctx context.Context) error) error {
	old := c.proc
	if done, _ := old.exited(); !done {
		return fmt.Errorf("%s still runs: Kill it first", c.name)
	}
	for n := 1; ; n++ {
		kept := fmt.Sprintf("%s.%d", old.logPath, n)
		if _, err := os.Stat(kept); errors.Is(err, os.ErrNotExist) {
			if err := os.Rename(old.logPath, kept); err != nil {
				return fmt.Errorf("keeping the log of %s: %w", c.name, err)
			}
			break
		}
	}
	p, err := startProcessEnv(c.name, old.logPath, old.cmd.Env, old.cmd.Path, old.cmd.Args[1:]...)
	if err != nil {
		return err
	}
	c.proc = p
	if ready == nil {
		return nil
	}
	if err := waitReady(ctx, p, ready); err != nil {
		return fmt.Errorf("%s not ready after a restart: %w\n%s", c.name, err, p.logTail(30))
	}
	return nil
}

// RestartHubProcess restarts a fleetfit-hub started by StartHubProcess (see
// Component.Restart) and waits until it answers /healthz again on the same
// address.
func RestartHubProcess(ctx context.Context, hub *Component) error {
	check := healthz("https://%s/healthz")
	return hub.Restart(ctx, func(ctx context.Context) error { return check(ctx, hub.Addr()) })
}

// HubMetrics returns the samples of the metric name (without labels: the
// sum over all label sets) served on /metrics by a fleetfit-hub started with
// StartHubProcess, read as hub's admin. found is false when the hub serves no
// such metric.
func HubMetrics(ctx context.Context, hub *ControlPlane, c Endpoint, name string) (value float64, found bool, err error) {
	body, err := HubGet(ctx, hub, c, "/metrics")
	if err != nil {
		return 0, false, err
	}
	defer body.Close()
	// The text exposition format: "name value" or "name{labels} value", comments with "#".
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return 0, false, fmt.Errorf("malformed metrics line %q", line)
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, false, fmt.Errorf("malformed metrics line %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, false, fmt.Errorf("metrics line %q: %w", line, err)
		}
		value += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, false, fmt.Errorf("reading the metrics of %s: %w", c.Name(), err)
	}
	return value, found, nil
}

// Endpoint is a fleetfit-hub's HTTPS endpoint: a process's (Component) or an in-process
// hub's (RunHubServing).
type Endpoint interface {
	Addr() string
	Name() string
}

// HubGet reads path from the HTTPS endpoint of a fleetfit-hub started with StartHubProcess,
// as hub's admin, and returns the body of a 200 answer; the caller closes it.
func HubGet(ctx context.Context, hub *ControlPlane, c Endpoint, path string) (io.ReadCloser, error) {
	cfg := hub.AdminConfig()
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		return nil, err
	}
	client := &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert},
			// The hub serves a certificate it made for itself, signed by no CA the test knows.
			InsecureSkipVerify: true, //nolint:gosec // loopback, test only
		}},
	}
	if _, ok := ctx.Deadline(); !ok {
		client.Timeout = 10 * time.Second
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+c.Addr()+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s: %w", path, c.Name(), err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("reading %s of %s: %s", path, c.Name(), resp.Status)
	}
	return resp.Body, nil
}
