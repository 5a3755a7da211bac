package framework

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BinDirEnv names the environment variable that points at the directory with
// the etcd and Kubernetes binaries built by `make tools`.
const BinDirEnv = "FLEETFIT_BIN_DIR"

// BinaryPath returns the path of a binary built by `make tools`: from
// $FLEETFIT_BIN_DIR when set, else from bin/ at the root of the module that
// contains the working directory.
func BinaryPath(name string) (string, error) {
	dir := os.Getenv(BinDirEnv)
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s not found in %s: run `make tools` first (or set %s)", name, dir, BinDirEnv)
	}
	return p, nil
}

// moduleRoot walks up from the working directory to the directory holding
// the fleetfit go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/fleetfit/fleetfit\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the fleetfit module root above the working directory")
		}
		dir = parent
	}
}

// process is a child process whose output goes to a log file. It is killed
// when the test binary dies (Pdeathsig), so a crashed or timed-out test never
// leaves a server behind.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	waitErr error
}

func startProcess(name, logPath, binary string, args ...string) (*process, error) {
	return startProcessEnv(name, logPath, nil, binary, args...)
}

// startProcessEnv is startProcess with extra environment variables
// ("KEY=value") on top of the test binary's environment.
func startProcessEnv(name, logPath string, env []string, binary string, args ...string) (*process, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has stopped, and why.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

// stop asks the process to terminate and kills it (and its process group)
// when it does not within the grace period.
func (p *process) stop(grace time.Duration) {
	if done, _ := p.exited(); done {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// logTail returns the last lines of the process's log, for error messages.
func (p *process) logTail(lines int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// ports hands out loopback ports that are free now and were not handed out
// before in this process, so concurrent control planes never collide with
// each other. Another program may still take a port between the check and
// the bind; StartControlPlane retries in that case.
var ports = struct {
	sync.Mutex
	used map[int]bool
}{used: map[int]bool{}}

func freePort() (int, error) {
	ports.Lock()
	defer ports.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !ports.used[port] {
			ports.used[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port found")
}
