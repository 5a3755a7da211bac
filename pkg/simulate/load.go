package simulate

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
)

// Load reads the fleet a command works on: the fleet files when there are any, else the live
// hub that hub configures. It returns the fleet and the time to schedule it at: now for the
// hub, the newest observation of its inventories for files, so that an old file stays valid.
func Load(ctx context.Context, files []string, hub func() (*rest.Config, error), now time.Time) (*Fleet, time.Time, error) {
	if len(files) > 0 {
		fleet, err := ReadFiles(ctx, files, ReadOptions{Now: now})
		if err != nil {
			return nil, now, err
		}
		if at := fleet.LatestObservation(); !at.IsZero() {
			now = at
		}
		return fleet, now, nil
	}
	cfg, err := hub()
	if err != nil {
		return nil, now, err
	}
	fleet, err := FromHub(ctx, cfg)
	if err != nil {
		return nil, now, fmt.Errorf("reading the fleet from the hub: %w", err)
	}
	return fleet, now, nil
}
