// Command fleetfit-demo runs the local demo fleet (`make demo`) until it receives SIGINT or
// SIGTERM (`make demo-down`); see package github.com/fleetfit/fleetfit/test/demo. It writes
// its process id to <dir>/demo.pid while it runs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/fleetfit/fleetfit/test/demo"
)

func main() {
	o := demo.Options{}
	flag.StringVar(&o.Dir, "dir", "_demo", "directory for the clusters' kubeconfig files and demo.pid")
	flag.DurationVar(&o.SettleTimeout, "settle-timeout", demo.DefaultSettleTimeout, "how long to wait for reports, decisions and pods")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}

func run(o demo.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return err
	}
	pidFile := filepath.Join(o.Dir, "demo.pid")
	if b, err := os.ReadFile(pidFile); err == nil {
		if pid, err := strconv.Atoi(string(b)); err == nil && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("a demo is already running as process %d (stop it with make demo-down)", pid)
		}
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	defer func() {
		_ = os.Remove(pidFile)
		// The directory goes too when the demo left nothing else in it.
		_ = os.Remove(o.Dir)
	}()
	err := demo.Run(ctx, o, os.Stdout, nil)
	if err != nil && ctx.Err() != nil {
		// Stopped while starting: what was started is gone again, as asked.
		fmt.Println("demo: stopped before the fleet was up")
		return nil
	}
	return err
}
