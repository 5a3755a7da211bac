// Command gentemplate writes the AddOnTemplate of fleetfit's agent,
// deploy/addon/addontemplate.yaml, from deploy/agent's manifests and the
// managed cluster's CRDs (see package addontemplate). `make generate` runs
// it; `make verify` checks that its output is committed.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/fleetfit/fleetfit/pkg/install/internal/addontemplate"
)

func main() {
	out := flag.String("o", "deploy/addon/addontemplate.yaml", "file to write the AddOnTemplate to")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintf(os.Stderr, "gentemplate: %v\n", err)
		os.Exit(1)
	}
}

func run(out string) error {
	src, err := addontemplate.AgentSources()
	if err != nil {
		return err
	}
	t, err := addontemplate.Build(src)
	if err != nil {
		return err
	}
	raw, err := addontemplate.Render(t)
	if err != nil {
		return err
	}
	return os.WriteFile(out, raw, 0o644)
}
