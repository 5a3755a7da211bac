package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// Execute runs a command with a context that ends on SIGINT or SIGTERM, and
// exits non-zero with the error printed when it fails. Mains call only this.
//
// A command is expected to return soon after its context ends. If it has not
// after grace, or on a second signal, the process exits at once with status
// 130, so that Ctrl-C always ends a command that is stuck in a long
// computation. Daemons use DaemonGrace, the CLI CLIGrace.
func Execute(c *cobra.Command, grace time.Duration) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	finished := make(chan struct{})
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		// The default handling is back: a second signal ends the process.
		stop()
		select {
		case <-finished:
		case <-time.After(grace):
			fmt.Fprintf(os.Stderr, "Error: interrupted; %s did not stop within %s\n", c.Name(), grace)
			os.Exit(130)
		}
	}()
	err := c.ExecuteContext(ctx)
	close(finished)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "Error: %v\n", err)
		os.Exit(1)
	}
}

// How long a command may take to return after a signal: a daemon long enough
// to release its leader Lease, the CLI short enough for a person pressing
// Ctrl-C.
const (
	DaemonGrace = 5 * time.Second
	CLIGrace    = time.Second
)
