package textcap

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	cases := map[string]struct {
		in   string
		max  int
		want string
	}{
		"short":         {in: "abc", max: 10, want: "abc"},
		"exact":         {in: "abcdef", max: 6, want: "abcdef"},
		"cut with note": {in: strings.Repeat("a", 100), max: 40, want: strings.Repeat("a", 20) + "… (80 more bytes)"},
		"too small":     {in: "abcdef", max: 3, want: "abc"},
		"rune boundary": {in: strings.Repeat("☃", 10), max: 4, want: "☃"},
		"zero":          {in: "abc", max: 0, want: ""},
		"snowmen noted": {in: strings.Repeat("☃", 20), max: 30, want: "☃☃☃" + "… (51 more bytes)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Truncate(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if len(got) > tc.max || !utf8.ValidString(got) {
				t.Errorf("Truncate(%q, %d) = %q: %d bytes, valid UTF-8 %v", tc.in, tc.max, got, len(got), utf8.ValidString(got))
			}
		})
	}
}

func TestJoin(t *testing.T) {
	cases := map[string]struct {
		items              []string
		maxItems, maxBytes int
		want               string
	}{
		"all":       {items: []string{"a", "b"}, maxItems: 5, maxBytes: 100, want: "a, b"},
		"by count":  {items: []string{"a", "b", "c", "d"}, maxItems: 2, maxBytes: 100, want: "a, b and 2 more"},
		"by bytes":  {items: []string{"aaaa", "bbbb", "cccc"}, maxItems: 10, maxBytes: 16, want: "aaaa and 2 more"},
		"none":      {items: nil, maxItems: 3, maxBytes: 10, want: ""},
		"long head": {items: []string{strings.Repeat("x", 50), "y"}, maxItems: 10, maxBytes: 40, want: strings.Repeat("x", 10) + "… (40 more bytes) and 1 more"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Join(tc.items, ", ", tc.maxItems, tc.maxBytes); got != tc.want {
				t.Errorf("Join = %q, want %q", got, tc.want)
			}
		})
	}
}
