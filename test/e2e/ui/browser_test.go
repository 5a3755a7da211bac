package ui

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/fleetfit/fleetfit/test/framework"
)

// ChromiumEnv names the Chromium binary when it is not Debian's /usr/bin/chromium.
const ChromiumEnv = "FLEETFIT_CHROMIUM"

// ScreenshotEnv names where the test writes its screenshot of the fleet view (PNG); without
// it the screenshot goes to the test's temporary directory.
const ScreenshotEnv = "FLEETFIT_UI_SCREENSHOT"

// pageTimeout bounds one wait for the page: it reads the hub every few seconds.
const pageTimeout = 45 * time.Second

// chromium returns the path of the browser, or fails the test saying how to install it: the
// page is tested in a real browser or not at all, never skipped in silence.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv(ChromiumEnv)
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Chromium is not installed (%v): this test drives the page in headless Chromium; install Debian's package "+
			"(apt-get install chromium, as .ci/run does) or point %s at a Chromium binary", err, ChromiumEnv)
	}
	return path
}

// browser starts headless Chromium with a fresh profile and returns a context for its first
// tab; it is closed when the test ends.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first action starts the browser, with no timeout: it lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return ctx
}

// do runs browser steps bounded by pageTimeout.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// value runs one browser action bounded by pageTimeout and returns its value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, pageTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// uiProcess is `bin/fleetfit ui` running with a kubeconfig.
type uiProcess struct {
	URL string
	cmd *exec.Cmd
	out *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var servingLine = regexp.MustCompile(`at (http://127\.0\.0\.1:[0-9]+/)`)

// startUI runs `bin/fleetfit ui --kubeconfig <kubeconfig> --port 0` and waits until it says
// where it serves the page. It is stopped when the test ends.
func startUI(t *testing.T, kubeconfig string) *uiProcess {
	t.Helper()
	bin := fleetfitBinary(t)
	cmd := exec.Command(bin, "ui", "--kubeconfig", kubeconfig, "--port", "0", "-v", "4")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &uiProcess{cmd: cmd, out: &syncBuffer{}}
	cmd.Stderr = p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s ui: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("fleetfit ui --kubeconfig %s:\n%s", kubeconfig, p.out.String())
		}
	})
	found := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			fmt.Fprintln(p.out, s.Text())
			if m := servingLine.FindStringSubmatch(s.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case p.URL = <-found:
	case <-time.After(30 * time.Second):
		t.Fatalf("fleetfit ui did not say where it serves the page:\n%s", p.out.String())
	}
	return p
}

func fleetfitBinary(t *testing.T) string {
	t.Helper()
	bin, err := framework.BinaryPath("fleetfit")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// fleetfitCLI runs bin/fleetfit with args and returns its standard output.
func fleetfitCLI(ctx context.Context, t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, fleetfitBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("fleetfit %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// writeKubeconfig writes a kubeconfig of the hub for cfg's identity.
func writeKubeconfig(t *testing.T, name string, raw []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
