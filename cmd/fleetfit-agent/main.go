// Command fleetfit-agent; see package github.com/fleetfit/fleetfit/pkg/cmd/agent.
package main

import (
	"github.com/fleetfit/fleetfit/pkg/cmd"
	"github.com/fleetfit/fleetfit/pkg/cmd/agent"
)

func main() {
	cmd.Execute(agent.NewCommand(), cmd.DaemonGrace)
}
