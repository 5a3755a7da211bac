package cmd

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// helperEnv makes the test binary run Execute on a command instead of the tests: "stuck"
// ignores its context, "honours" returns when its context ends.
const helperEnv = "FLEETFIT_RUN_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "stuck":
		Execute(&cobra.Command{Use: "stuck", RunE: func(*cobra.Command, []string) error {
			os.Stdout.WriteString("running\n")
			select {} //nolint:staticcheck // a command that never looks at its context
		}}, 200*time.Millisecond)
	case "honours":
		Execute(&cobra.Command{Use: "honours", RunE: func(c *cobra.Command, _ []string) error {
			os.Stdout.WriteString("running\n")
			<-c.Context().Done()
			return c.Context().Err()
		}}, time.Minute)
	}
	os.Exit(m.Run())
}

// run starts the helper, sends SIGTERM once it runs, and returns its exit code and stderr.
func run(t *testing.T, mode string) (int, string) {
	t.Helper()
	c := exec.Command(os.Args[0], "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"="+mode)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = c.Process.Kill()
		t.Fatalf("%s: still running 30s after SIGTERM", mode)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("%s: exited with %v, want a non-zero status", mode, err)
	}
	return exit.ExitCode(), stderr.String()
}

func TestSignalEndsTheCommand(t *testing.T) {
	if code, stderr := run(t, "honours"); code != 1 || !strings.Contains(stderr, "context canceled") {
		t.Errorf("a command that honours its context: status %d, stderr %q; want 1 and the cancellation", code, stderr)
	}
	if code, stderr := run(t, "stuck"); code != 130 || !strings.Contains(stderr, "stuck did not stop within 200ms") {
		t.Errorf("a stuck command: status %d, stderr %q; want 130 and why", code, stderr)
	}
}
