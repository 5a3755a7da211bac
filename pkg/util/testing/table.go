package testing

import (
	"slices"
	"strings"
)

// TableRows splits a kubectl-style table into rows of cells: cells are separated by two or more
// spaces, so a cell may hold single spaces.
func TableRows(table string) [][]string {
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(table), "\n") {
		var cells []string
		for _, c := range strings.Split(line, "  ") {
			if c = strings.TrimSpace(c); c != "" {
				cells = append(cells, c)
			}
		}
		out = append(out, cells)
	}
	return out
}

// HasRow reports whether a table in out has a row that starts with cells.
func HasRow(out string, cells ...string) bool {
	for _, row := range TableRows(out) {
		if len(row) >= len(cells) && slices.Equal(row[:len(cells)], cells) {
			return true
		}
	}
	return false
}
