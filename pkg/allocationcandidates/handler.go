package allocationcandidates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"github.com/fleetfit/fleetfit/pkg/hubauth"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// Path is where the hub serves GET Path?QUERY.
const Path = "/allocation_candidates"

// FleetSource returns the snapshot to answer from and the time to answer at.
type FleetSource func() (*framework.Snapshot, time.Time)

// ErrorResponse is OpenStack Placement's error body.
type ErrorResponse struct {
	Errors []ErrorDetail `json:"errors"`
}

// ErrorDetail is one error of an ErrorResponse.
type ErrorDetail struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
}

// HandlerOptions bound the endpoint's work, so that no query, nor many at once, can take the
// hub's CPU and memory from its scheduling.
type HandlerOptions struct {
	Limits Limits
	// MaxConcurrent is how many queries are searched at once; others wait for their turn
	// until their Timeout, then get 503 with Retry-After.
	MaxConcurrent int
	// Timeout is how long a query may take, its wait for a turn included; beyond it, the
	// search stops and the answer is 503.
	Timeout time.Duration
}

// Defaults of HandlerOptions.
const (
	DefaultMaxConcurrent = 2
	DefaultTimeout       = 10 * time.Second
)

// DefaultHandlerOptions returns the endpoint's defaults.
func DefaultHandlerOptions() HandlerOptions {
	lim := DefaultLimits()
	// Together, the searches take at most half the cores (one at least): the rest are the
	// scheduler's.
	lim.Parallelism = max(1, min(lim.Parallelism, runtime.GOMAXPROCS(0)/2/DefaultMaxConcurrent))
	return HandlerOptions{Limits: lim, MaxConcurrent: DefaultMaxConcurrent, Timeout: DefaultTimeout}
}

// listClusters is what a query needs: the answer names clusters and describes their nodes.
var listClusters = hubauth.Access{Verb: "list", Group: clusterv1.GroupName, Version: "v1", Resource: "managedclusters"}

// Handler serves GET /allocation_candidates. The caller needs "list" on managedclusters
// (door answers for the endpoint when not). A bad query, or one that needs more than
// opts.Limits.WorkBudget, is a 400 naming the parameter or what to change; a query that finds
// no turn or does not finish within opts.Timeout is a 503 with Retry-After. A search stops as
// soon as its caller leaves.
func Handler(fleet FleetSource, door *hubauth.Door, opts HandlerOptions) http.Handler {
	d := DefaultHandlerOptions()
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = d.MaxConcurrent
	}
	if opts.Timeout <= 0 {
		opts.Timeout = d.Timeout
	}
	turns := make(chan struct{}, opts.MaxConcurrent)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			writeError(w, http.StatusMethodNotAllowed, "only GET is served")
			return
		}
		if !door.Allow(w, r, listClusters) {
			return
		}
		q, err := ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		logger := klog.FromContext(r.Context())
		ctx, cancel := context.WithTimeout(r.Context(), opts.Timeout)
		defer cancel()
		select {
		case turns <- struct{}{}:
			defer func() { <-turns }()
		case <-ctx.Done():
			if r.Context().Err() != nil {
				return
			}
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf(
				"the hub answers %d allocation candidate queries at once and none ended within %s: retry later", opts.MaxConcurrent, opts.Timeout))
			return
		}
		snap, now := fleet()
		resp, err := Evaluate(ctx, snap, q, now, opts.Limits)
		var bad *Error
		var costly *BudgetError
		switch {
		case err == nil:
		case errors.As(err, &bad) || errors.As(err, &costly):
			writeError(w, http.StatusBadRequest, err.Error())
			return
		case r.Context().Err() != nil:
			// The caller left: nobody reads an answer.
			logger.V(logs.Debug).Info("Stopped an allocation candidates search whose caller left", "query", r.URL.RawQuery)
			return
		default:
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, fmt.Sprintf(
				"the search did not finish within %s: retry later, or give a small limit or fewer numbered groups", opts.Timeout))
			return
		}
		logger.V(logs.Debug).Info("Served allocation candidates", "query", r.URL.RawQuery, "candidates", len(resp.AllocationRequests))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_ = json.NewEncoder(w).Encode(resp)
	})
}

func writeError(w http.ResponseWriter, code int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(ErrorResponse{Errors: []ErrorDetail{{Status: code, Title: http.StatusText(code), Detail: detail}}})
}
