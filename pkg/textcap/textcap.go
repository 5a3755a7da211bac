// Package textcap bounds the text fleetfit writes into API objects and shows to users:
// condition messages, reasons and lists of names. A status that grows with the fleet or with
// user input must stay within what the API server accepts (a request body of a few MB, and
// far less for a readable condition), so every such text goes through here. Cuts always fall
// on rune boundaries, and what was left out is counted, never silently dropped.
package textcap

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxMessage is the length, in bytes, that fleetfit keeps condition messages within: far
// below the API's 32 KiB limit on a condition message, and still a readable paragraph.
const MaxMessage = 4096

// Truncate returns s cut to at most max bytes at a rune boundary, with a note of how many
// bytes were left out when it was cut. A max too small for the note cuts without one.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	// The note counts the bytes really left out, so it is sized for the most that can be.
	keep := max - len(note(len(s)))
	if keep <= 0 {
		return cut(s, max)
	}
	kept := cut(s, keep)
	return kept + note(len(s)-len(kept))
}

func note(omitted int) string { return fmt.Sprintf("… (%d more bytes)", omitted) }

// cut returns the longest prefix of s of at most max bytes that ends on a rune boundary.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}

// Join joins items with sep, keeping at most maxItems of them and at most maxBytes in all;
// when items are left out it ends with " and N more". Items are kept in order and whole
// (an item longer than what is left is cut with Truncate only when it is the first).
func Join(items []string, sep string, maxItems, maxBytes int) string {
	var b strings.Builder
	kept := 0
	for _, it := range items {
		if kept == maxItems {
			break
		}
		add := it
		if kept > 0 {
			add = sep + it
		}
		// Leave room for the " and N more" that follows when this is not the last.
		tail := 0
		if kept+1 < len(items) {
			tail = len(fmt.Sprintf(" and %d more", len(items)-kept-1))
		}
		if b.Len()+len(add)+tail > maxBytes {
			if kept == 0 {
				b.WriteString(Truncate(it, max(maxBytes-len(fmt.Sprintf(" and %d more", len(items)-1)), 0)))
				kept++
			}
			break
		}
		b.WriteString(add)
		kept++
	}
	if left := len(items) - kept; left > 0 {
		fmt.Fprintf(&b, " and %d more", left)
	}
	return b.String()
}
