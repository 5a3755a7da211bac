package output

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean makes text taken from objects — names, labels, messages — safe to print on a terminal
// and in a table: control characters (ANSI escape sequences start with one), tabs and line
// breaks, the characters that reorder text (bidirectional controls) and bytes that are not
// UTF-8 are written as Go escapes such as \x1b, so that an object can never move the cursor,
// recolour the terminal or break a table's columns.
func Clean(s string) string { return clean(s, false) }

// CleanLines is Clean for a message of several lines: line breaks are kept.
func CleanLines(s string) string { return clean(s, true) }

func clean(s string, keepLines bool) string {
	if !needsCleaning(s, keepLines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' && keepLines:
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x100 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

func needsCleaning(s string, keepLines bool) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (r == '\n' && !keepLines) || (r != '\n' && r < 0x100 && unicode.IsControl(r)) || unsafeRune(r) {
			return true
		}
		i += size
	}
	return false
}

// unsafeRune reports whether r, beyond Latin-1, controls the terminal or the order of text:
// bidirectional controls, line and paragraph separators, and other invisible format
// characters a terminal may act on.
func unsafeRune(r rune) bool {
	return r >= 0x100 && (unicode.Is(unicode.Bidi_Control, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r))
}

// cleanError is an error whose message is safe for a terminal; it unwraps to the original.
type cleanError struct{ err error }

func (e cleanError) Error() string { return CleanLines(e.err.Error()) }
func (e cleanError) Unwrap() error { return e.err }

// CleanError returns err with a message safe to print on a terminal (see CleanLines), or nil.
func CleanError(err error) error {
	if err == nil {
		return nil
	}
	return cleanError{err}
}
