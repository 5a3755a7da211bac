// Package output prints what fleetfit's commands show, as kubectl does: a table by default,
// or the objects themselves with -o yaml|json.
package output

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"
)

// Formats every command takes.
const (
	Table = "table"
	YAML  = "yaml"
	JSON  = "json"
	Wide  = "wide"
)

// Flags is the -o/--output flag.
type Flags struct {
	Format  string
	allowed []string
}

// AddFlags registers -o with the formats a command supports; the first is the default.
func AddFlags(c *cobra.Command, formats ...string) *Flags {
	f := &Flags{Format: formats[0], allowed: formats}
	c.Flags().StringVarP(&f.Format, "output", "o", f.Format, "output format: one of "+strings.Join(formats, "|"))
	return f
}

// Validate checks the chosen format.
func (f *Flags) Validate() error {
	if !slices.Contains(f.allowed, f.Format) {
		return fmt.Errorf("unknown output format %q: use one of %s", f.Format, strings.Join(f.allowed, ", "))
	}
	return nil
}

// Structured reports whether the objects themselves are printed rather than a table.
func (f *Flags) Structured() bool { return f.Format == YAML || f.Format == JSON }

// PrintObject prints obj as YAML or JSON. Typed objects need their apiVersion and kind set.
func (f *Flags) PrintObject(w io.Writer, obj runtime.Object) error {
	var p printers.ResourcePrinter = &printers.YAMLPrinter{}
	if f.Format == JSON {
		p = &printers.JSONPrinter{}
	}
	return p.PrintObj(obj, w)
}

// PrintData prints a value that is no API object (an explanation, say) as YAML or JSON,
// with the field names of its JSON encoding.
func (f *Flags) PrintData(w io.Writer, v any) error {
	if f.Format == JSON {
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// List wraps objects in a v1 List, as kubectl prints several objects.
func List(objs ...runtime.Object) *metav1.List {
	l := &metav1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}, Items: []runtime.RawExtension{}}
	for _, o := range objs {
		l.Items = append(l.Items, runtime.RawExtension{Object: o})
	}
	return l
}

// NewTable returns kubectl's tab writer: columns separated by tabs, flushed by the caller.
func NewTable(w io.Writer) *tableWriter {
	return &tableWriter{tw: printers.GetNewTabWriter(w)}
}

type tableWriter struct {
	tw interface {
		io.Writer
		Flush() error
	}
}

// Row writes one row of cells, each made safe for a terminal (see Clean): a cell never holds
// a tab that would shift the columns after it, nor a control character.
func (t *tableWriter) Row(cells ...string) {
	clean := make([]string, len(cells))
	for i, c := range cells {
		clean[i] = Clean(c)
	}
	fmt.Fprintln(t.tw, strings.Join(clean, "\t"))
}

// Flush writes the table out.
func (t *tableWriter) Flush() error { return t.tw.Flush() }

// Age prints how long ago t was, as kubectl's AGE column does; <unknown> for the zero time.
func Age(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// Or returns s, or def when s is empty.
func Or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
