package simulate

import (
	"os"
	"time"

	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// ReadFiles reads fleet files ("-" is standard input) and builds the inventories of the
// clusters given as Nodes and Pods, observed when the newest inventory of the files was, or
// at now when the files hold none: a fleet file is a snapshot of one moment.
func ReadFiles(files []string, now time.Time) (*Fleet, error) {
	f := &Fleet{}
	for _, name := range files {
		if err := decodeFile(f, name); err != nil {
			return nil, err
		}
	}
	if at := f.LatestObservation(); !at.IsZero() {
		now = at
	}
	if err := f.BuildInventories(inventory.DefaultConfig(), now); err != nil {
		return nil, err
	}
	return f, nil
}

func decodeFile(f *Fleet, name string) error {
	if name == "-" {
		return f.Decode(os.Stdin, "standard input")
	}
	r, err := os.Open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	return f.Decode(r, name)
}
