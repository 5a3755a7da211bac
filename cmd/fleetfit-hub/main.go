// Command fleetfit-hub; see package github.com/fleetfit/fleetfit/pkg/cmd/hub.
package main

import (
	"github.com/fleetfit/fleetfit/pkg/cmd"
	"github.com/fleetfit/fleetfit/pkg/cmd/hub"
)

func main() {
	cmd.Execute(hub.NewCommand(), cmd.DaemonGrace)
}
