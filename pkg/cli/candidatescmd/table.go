package candidatescmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/fleetfit/fleetfit/pkg/allocationcandidates"
	"github.com/fleetfit/fleetfit/pkg/cli/output"
)

// printTable prints one row per candidate: its cluster, then per request group (the
// unnumbered one first, then the numbered ones in suffix order) the nodes it takes and how
// much of each. Nodes are written without their cluster's prefix.
func printTable(w io.Writer, q *allocationcandidates.Query, resp *allocationcandidates.Response) error {
	if len(resp.AllocationRequests) == 0 {
		_, err := fmt.Fprintln(w, "No allocation candidates.")
		return err
	}
	t := output.NewTable(w)
	header := []string{"CLUSTER"}
	for i := range q.Groups {
		header = append(header, "RESOURCES"+strings.ToUpper(q.Groups[i].Suffix))
	}
	t.Row(header...)
	for i := range resp.AllocationRequests {
		ar := &resp.AllocationRequests[i]
		row := []string{ar.Cluster()}
		for _, gp := range ar.Groups() {
			row = append(row, groupCell(ar.Cluster(), gp))
		}
		t.Row(row...)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if resp.Truncated != nil {
		_, err := fmt.Fprintf(w, "Only the first %d candidates: %s.\n", resp.Truncated.Candidates, resp.Truncated.Detail)
		return err
	}
	return nil
}

// groupCell writes "shape/i: cpu 2, memory 4Gi", one part per node, in the group's order.
func groupCell(cluster string, gp allocationcandidates.GroupPlacement) string {
	var parts []string
	last := ""
	for j, r := range gp.Resources {
		node := strings.TrimPrefix(gp.Nodes[j], cluster+"/")
		q := r.Quantity()
		item := string(r.Name) + " " + q.String()
		if node == last {
			parts[len(parts)-1] += ", " + item
			continue
		}
		parts = append(parts, node+": "+item)
		last = node
	}
	return strings.Join(parts, "; ")
}
