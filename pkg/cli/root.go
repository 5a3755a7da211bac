// Package cli is the fleetfit command-line tool, in the style of clusteradm
// and kubectl: every command has an Options struct that is completed from
// flags, validated, then run.
package cli

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fleetfit/fleetfit/pkg/cli/addoncmd"
	"github.com/fleetfit/fleetfit/pkg/cli/candidatescmd"
	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
	"github.com/fleetfit/fleetfit/pkg/cli/explaincmd"
	"github.com/fleetfit/fleetfit/pkg/cli/getcmd"
	"github.com/fleetfit/fleetfit/pkg/cli/installcmd"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
	"github.com/fleetfit/fleetfit/pkg/cli/simulatecmd"
	"github.com/fleetfit/fleetfit/pkg/cli/uicmd"
	"github.com/fleetfit/fleetfit/pkg/cmd"
	"github.com/fleetfit/fleetfit/pkg/version"
)

// NewCommand returns the fleetfit root command.
func NewCommand() *cobra.Command {
	c := &cobra.Command{
		Use:           "fleetfit",
		Short:         "Hardware-aware scheduling for Open Cluster Management fleets",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags := clientopts.New()
	flags.AddFlags(c.PersistentFlags())
	c.AddCommand(
		getcmd.NewCommand(flags),
		explaincmd.NewCommand(flags),
		simulatecmd.NewCommand(flags),
		candidatescmd.NewCommand(flags),
		installcmd.NewCommand(flags),
		addoncmd.NewCommand(flags),
		uicmd.NewCommand(flags),
		newVersionCommand(),
	)
	cmd.AddLogFlags(c)
	cleanErrors(c)
	return c
}

// cleanErrors makes the errors of c and its subcommands safe to print on a terminal: they
// quote names, values and messages from files and from the hub, which may hold control
// characters (see output.CleanLines).
func cleanErrors(c *cobra.Command) {
	for _, sub := range c.Commands() {
		cleanErrors(sub)
	}
	if run := c.RunE; run != nil {
		c.RunE = func(c *cobra.Command, args []string) error { return output.CleanError(run(c, args)) }
	}
}

func newVersionCommand() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "version",
		Short: "Print the version of fleetfit",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return printVersion(c.OutOrStdout(), output)
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "", "output format: '' or json")
	return c
}

func printVersion(w io.Writer, output string) error {
	info := version.Get()
	switch output {
	case "":
		commit := info.GitCommit
		if commit == "" {
			commit = "unknown"
		}
		_, err := fmt.Fprintf(w, "fleetfit %s (commit %s, %s, %s)\n", info.GitVersion, commit, info.GoVersion, info.Platform)
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(info)
	default:
		return fmt.Errorf("unknown output format %q: use json or leave it empty", output)
	}
}
