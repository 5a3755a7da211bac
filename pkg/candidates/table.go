package candidates

import (
	"fmt"
	"io"
	"strings"

	"github.com/fleetfit/fleetfit/pkg/cli/output"
)

// PrintTable prints one row per candidate: its cluster, then per request group (the
// unnumbered one first, then the numbered ones in suffix order) the nodes it takes and how
// much of each. Nodes are written without their cluster's prefix.
func PrintTable(w io.Writer, q *Query, resp *Response) error {
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
	for _, ar := range resp.AllocationRequests {
		row := []string{ar.cluster}
		for _, gp := range ar.groups {
			row = append(row, groupCell(ar.cluster, gp))
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
func groupCell(cluster string, gp groupPlacement) string {
	var parts []string
	last := ""
	for j, r := range gp.amount {
		node := strings.TrimPrefix(gp.nodes[j], cluster+"/")
		q := quantity(r.Name, r.Milli)
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
