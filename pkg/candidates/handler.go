package candidates

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/klog/v2"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

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

// Handler serves GET /allocation_candidates. The caller needs "list" on managedclusters: the
// answer names clusters and describes their nodes. A bad query is a 400 naming the parameter.
func Handler(fleet FleetSource, authz authorizer.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			writeError(w, http.StatusMethodNotAllowed, "only GET is served")
			return
		}
		u, ok := request.UserFrom(r.Context())
		if !ok {
			writeError(w, http.StatusUnauthorized, "unauthenticated")
			return
		}
		decision, reason, err := authz.Authorize(r.Context(), authorizer.AttributesRecord{
			User: u, Verb: "list", ResourceRequest: true,
			APIGroup: clusterv1.GroupName, APIVersion: "v1", Resource: "managedclusters",
		})
		if err != nil || decision != authorizer.DecisionAllow {
			msg := fmt.Sprintf("user %q cannot list managedclusters", u.GetName())
			if reason != "" {
				msg += ": " + reason
			}
			writeError(w, http.StatusForbidden, msg)
			return
		}
		q, err := ParseQuery(r.URL.RawQuery)
		if err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		snap, now := fleet()
		resp := Evaluate(r.Context(), snap, q, now)
		klog.FromContext(r.Context()).V(4).Info("Served allocation candidates", "query", r.URL.RawQuery, "candidates", len(resp.AllocationRequests))
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
