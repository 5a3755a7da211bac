package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fleetfit/fleetfit/manifests"
	"github.com/fleetfit/fleetfit/pkg/install"
)

// StartHubPlane starts a control plane with the hub's CRDs (fleetfit's and OCM's) and nothing
// else, for a benchmark that fills it and runs a scheduler against it. On error nothing is
// left running.
func StartHubPlane(ctx context.Context, name string) (*ControlPlane, error) {
	cp, err := StartControlPlane(ctx, name, Options{})
	if err != nil {
		return nil, err
	}
	crds, err := manifests.HubCRDs()
	if err == nil {
		err = install.ApplyCRDs(ctx, cp.AdminConfig(), crds)
	}
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cp, nil
}

// APIRequests returns the API server's count of requests so far (its apiserver_request_total
// metric, summed over response codes and scopes) by "VERB resource[/subresource]", without
// watches and connections.
func APIRequests(ctx context.Context, cp *ControlPlane) (map[string]float64, error) {
	raw, err := cp.AdminClient().CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the metrics of %s: %w", cp.Name, err)
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		get := func(k string) string {
			_, v, ok := strings.Cut(labels, k+"=\"")
			if !ok {
				return ""
			}
			v, _, _ = strings.Cut(v, "\"")
			return v
		}
		verb, res, sub := get("verb"), get("resource"), get("subresource")
		if verb == "WATCH" || verb == "CONNECT" {
			continue
		}
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		key := verb + " " + res
		if sub != "" {
			key += "/" + sub
		}
		out[key] += n
	}
	return out, nil
}

// SaveHubProfile reads a profile (a pprof path such as /debug/pprof/heap) from a fleetfit-hub
// started with --profiling and writes it to file. Right after its start the hub may not know
// the API server's client CA yet, so a refused read is tried again for a while.
func SaveHubProfile(ctx context.Context, hub *ControlPlane, c Endpoint, path, file string) error {
	var raw []byte
	var err error
	for range 100 {
		var body io.ReadCloser
		if body, err = HubGet(ctx, hub, c, path); err != nil {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		raw, err = io.ReadAll(body)
		body.Close()
		break
	}
	if err != nil {
		return err
	}
	return os.WriteFile(file, raw, 0o644)
}
