package output

import (
	"bytes"
	"errors"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClean(t *testing.T) {
	cases := map[string]struct {
		in        string
		want      string
		wantLines string
	}{
		"plain":                    {in: "cluster-1 Ready", want: "cluster-1 Ready", wantLines: "cluster-1 Ready"},
		"not ASCII, harmless":      {in: "clüster ☃", want: "clüster ☃", wantLines: "clüster ☃"},
		"an ANSI colour":           {in: "\x1b[31mred\x1b[0m", want: `\x1b[31mred\x1b[0m`, wantLines: `\x1b[31mred\x1b[0m`},
		"a tab and line breaks":    {in: "a\tb\nc\r", want: `a\tb\nc\r`, wantLines: "a\\tb\nc\\r"},
		"a C1 control":             {in: "a\u009b31mb", want: `a\x9b31mb`, wantLines: `a\x9b31mb`},
		"DEL and NUL":              {in: "a\x7f\x00", want: `a\x7f\x00`, wantLines: `a\x7f\x00`},
		"a right-to-left override": {in: "abc\u202Etxt.exe", want: `abc\u202etxt.exe`, wantLines: `abc\u202etxt.exe`},
		"bytes that are not UTF-8": {in: "a\xff\xfeb", want: `a\xff\xfeb`, wantLines: `a\xff\xfeb`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Clean(tc.in)); diff != "" {
				t.Errorf("Clean (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLines, CleanLines(tc.in)); diff != "" {
				t.Errorf("CleanLines (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestTableRowsAreClean(t *testing.T) {
	var out bytes.Buffer
	tw := NewTable(&out)
	tw.Row("NAME", "MESSAGE")
	tw.Row("c1", "\x1b[2Jcleared\tshifted\nnext")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "NAME   MESSAGE\nc1     \\x1b[2Jcleared\\tshifted\\nnext\n"
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("table (-want,+got):\n%s", diff)
	}
}

func TestCleanError(t *testing.T) {
	err := CleanError(&fs.PathError{Op: "open", Path: "\x1b[2Jfleet.yaml", Err: fs.ErrNotExist})
	if want := `open \x1b[2Jfleet.yaml: file does not exist`; err.Error() != want {
		t.Errorf("error = %q, want %q", err.Error(), want)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the cleaned error does not unwrap to the original")
	}
	if CleanError(nil) != nil {
		t.Errorf("CleanError(nil) is not nil")
	}
}
