package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	hubcmd "github.com/fleetfit/fleetfit/pkg/cmd/hub"
)

// RunHub runs the fleetfit-hub command in-process against the API server of cfg, with its
// flags (by default no leader election and no HTTPS endpoint: pass --leader-elect=true or
// --secure-port=N to have them), until the returned stop is called or the test ends. stop
// waits for the command to return and fails the test when it returned an error.
func RunHub(t testing.TB, cfg *rest.Config, args ...string) (stop func()) {
	t.Helper()
	return runHub(t, cfg, append([]string{"--secure-port=0"}, args...)...)
}

// InProcessHub is the HTTPS endpoint of a fleetfit-hub run in-process by RunHubServing.
type InProcessHub struct{ addr string }

// Addr returns the endpoint's host:port.
func (h InProcessHub) Addr() string { return h.addr }

// Name names the hub in errors.
func (h InProcessHub) Name() string { return "fleetfit-hub (in-process)" }

// RunHubServing runs fleetfit-hub in-process as RunHub does, with its HTTPS endpoint (metrics,
// explain, health) on a free loopback port, and returns the endpoint for HubGet and
// HubMetrics.
func RunHubServing(t testing.TB, cfg *rest.Config, args ...string) (InProcessHub, func()) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	stop := runHub(t, cfg, append([]string{"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--cert-dir=" + filepath.Join(t.TempDir(), "certs")}, args...)...)
	return InProcessHub{addr: fmt.Sprintf("127.0.0.1:%d", port)}, stop
}

func runHub(t testing.TB, cfg *rest.Config, args ...string) (stop func()) {
	t.Helper()
	kc, err := Kubeconfig(cfg, "hub")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "fleetfit-hub.kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	c := hubcmd.NewCommand()
	c.SetArgs(append([]string{"--kubeconfig", path, "--leader-elect=false"}, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.ExecuteContext(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("fleetfit-hub: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}
