// Command fleetfit-demo runs the local demo fleet (`make demo`); see package
// github.com/fleetfit/fleetfit/test/demo.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/fleetfit/fleetfit/test/demo"
)

func main() {
	o := demo.Options{}
	flag.StringVar(&o.Dir, "dir", "_demo", "directory for the clusters' kubeconfig files")
	flag.IntVar(&o.Spokes, "spokes", 2, "number of managed clusters")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := demo.Run(ctx, o, os.Stdout, nil); err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		os.Exit(1)
	}
}
