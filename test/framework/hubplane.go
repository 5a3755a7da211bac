package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"

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
