package simulate

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// ObservationSlack is how far in the future of the reading machine's clock an inventory of a
// fleet file may have been observed: clocks of different machines disagree a little, never by
// more. A fleet file is simulated at its newest observation, so one later than that would move
// the whole simulation to a time no cluster has seen.
const ObservationSlack = 5 * time.Minute

// ReadOptions say when fleet files are read.
type ReadOptions struct {
	// Now is the clock of the reading machine: no inventory may have been observed after
	// Now plus ObservationSlack.
	Now time.Time
	// At, when set, is when the Nodes and Pods of the files are observed; else when the
	// newest inventory of the files was, else Now: a fleet file is a snapshot of one moment.
	At time.Time
}

// ReadFiles reads fleet files ("-" is standard input) and builds the inventories of the
// clusters given as Nodes and Pods. Its errors name the file, the document and the field.
// Reading stops with ctx.
func ReadFiles(ctx context.Context, files []string, opts ReadOptions) (*Fleet, error) {
	f := &Fleet{fromFiles: true}
	for _, name := range files {
		if err := decodeFile(ctx, f, name); err != nil {
			return nil, err
		}
	}
	for _, inv := range f.Inventories {
		if at := inv.Status.ObservedAt.Time; at.After(opts.Now.Add(ObservationSlack)) {
			return nil, fmt.Errorf("%sClusterInventory %q: status.observedAt %s is in the future (this machine's clock says %s): a fleet file is simulated at its newest observation, so fix the time, or remove it",
				placePrefix(f.where("ClusterInventory", inv.Namespace, inv.Name)), inv.Namespace+"/"+inv.Name, at.UTC().Format(time.RFC3339), opts.Now.UTC().Format(time.RFC3339))
		}
	}
	at := opts.At
	if at.IsZero() {
		at = f.LatestObservation()
	}
	if at.IsZero() {
		at = opts.Now
	}
	if err := f.BuildInventories(inventory.DefaultConfig(), at); err != nil {
		return nil, err
	}
	return f, nil
}

// placePrefix turns " (fleet.yaml, document 3)" into "fleet.yaml, document 3: ".
func placePrefix(where string) string {
	if len(where) < 3 {
		return ""
	}
	return where[2:len(where)-1] + ": "
}

// decodeFile decodes one fleet file into f, and refuses one that gives no object: an empty
// file, or one of comments only, is a mistake (the wrong file, or one not yet written) that
// would otherwise print an empty answer as if the fleet had nothing.
func decodeFile(ctx context.Context, f *Fleet, name string) error {
	before := len(f.places)
	source := name
	if name == "-" {
		source = "standard input"
	}
	if err := decodeSource(ctx, f, name, source); err != nil {
		return err
	}
	if len(f.places) == before {
		return fmt.Errorf("%s: nothing was read: it holds no object of a fleet (it is empty, or holds only comments, empty Lists or Namespaces, which are ignored); a fleet file holds %s", source, supportedKinds)
	}
	return nil
}

func decodeSource(ctx context.Context, f *Fleet, name, source string) error {
	if name == "-" {
		return f.Decode(ctx, os.Stdin, source)
	}
	r, err := os.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	// A regular file too large is refused before it is read at all; devices and pipes are
	// refused once they have given more than the limit.
	if st, err := r.Stat(); err == nil {
		if st.Mode().IsRegular() && st.Size() > MaxFileSize {
			return fmt.Errorf("%s: larger than %s (%d bytes): a fleet file holds at most %s (is it the file you meant?)", name, maxFileSizeText, st.Size(), maxFileSizeText)
		}
		if st.IsDir() {
			return fmt.Errorf("%s is a directory: give fleet files, one -f each", name)
		}
	}
	return f.Decode(ctx, r, name)
}
