// Command fleetfit is the CLI; see package github.com/fleetfit/fleetfit/pkg/cli.
package main

import (
	"github.com/fleetfit/fleetfit/pkg/cli"
	"github.com/fleetfit/fleetfit/pkg/cmd"
)

func main() {
	cmd.Execute(cli.NewCommand(), cmd.CLIGrace)
}
