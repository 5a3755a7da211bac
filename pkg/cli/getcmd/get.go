// Package getcmd holds `fleetfit get clusters`, `fleetfit get machinetypes` and `fleetfit get
// placements`: kubectl-like tables of what the hub knows, read from a live hub or from a fleet
// file.
package getcmd

import (
	"github.com/spf13/cobra"

	"github.com/fleetfit/fleetfit/pkg/cli/clientopts"
)

// NewCommand returns `fleetfit get`.
func NewCommand(flags *clientopts.Flags) *cobra.Command {
	c := &cobra.Command{
		Use:   "get",
		Short: "Show the fleet's clusters, machine types or placements as a table",
	}
	c.AddCommand(newClustersCommand(flags), newMachineTypesCommand(flags), newPlacementsCommand(flags))
	return c
}
