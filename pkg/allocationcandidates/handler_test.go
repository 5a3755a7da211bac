package allocationcandidates

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/fleetfit/fleetfit/pkg/hubauth"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestHandler(t *testing.T) {
	// Eight nodes of eight cores, each its own shape.
	var nodes []*corev1.Node
	for i := range 8 {
		n := fmt.Sprintf("n%d", i)
		nodes = append(nodes, ut.MakeNode(n).Label(name, n).Resource(corev1.ResourceCPU, "8").Obj())
	}
	snap := snapshot(t, map[string]clusterSpec{"c": {nodes: nodes}})
	fleet := func() (*framework.Snapshot, time.Time) { return snap, now }
	var asked authorizer.Attributes
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = a
		if a.GetUser().GetName() == "alice" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	door := hubauth.New(nil, authz)
	h := Handler(fleet, door, HandlerOptions{})
	// Seven one-core groups on eight nodes: 8^7 combinations.
	seven := "group_policy=none"
	for i := 1; i <= 7; i++ {
		seven += fmt.Sprintf("&resources%d=cpu:1", i)
	}
	cases := map[string]struct {
		user, method, query string
		opts                *HandlerOptions
		status              int
		body                string
	}{
		"answer":          {user: "alice", method: http.MethodGet, query: "resources=cpu:2", status: http.StatusOK, body: `"c/`},
		"bad query":       {user: "alice", method: http.MethodGet, query: "resources=cpu:0", status: http.StatusBadRequest, body: `"detail":"resources: cpu: the amount must be positive`},
		"not allowed":     {user: "mallory", method: http.MethodGet, query: "resources=cpu:2", status: http.StatusForbidden, body: `cannot list managedclusters`},
		"unauthenticated": {method: http.MethodGet, query: "resources=cpu:2", status: http.StatusUnauthorized, body: `unauthenticated`},
		"not a GET":       {user: "alice", method: http.MethodPost, query: "resources=cpu:2", status: http.StatusMethodNotAllowed, body: `only GET`},
		"a label no cluster reports": {user: "alice", method: http.MethodGet, query: "resources=cpu:2&required=example.com/magic",
			status: http.StatusBadRequest, body: `"detail":"required: no cluster reports the node label example.com/magic`},
		"every combination is cut": {user: "alice", method: http.MethodGet, query: seven,
			status: http.StatusOK, body: `"truncated":{"candidates":1000,`},
		"over the work budget": {user: "alice", method: http.MethodGet, query: seven,
			opts:   &HandlerOptions{Limits: Limits{WorkBudget: 1000}},
			status: http.StatusBadRequest, body: `"detail":"query: too costly to answer`},
		"out of time": {user: "alice", method: http.MethodGet, query: seven,
			opts:   &HandlerOptions{Timeout: time.Nanosecond},
			status: http.StatusServiceUnavailable, body: `within 1ns`},
	}
	for title, tc := range cases {
		t.Run(title, func(t *testing.T) {
			h := h
			if tc.opts != nil {
				h = Handler(fleet, door, *tc.opts)
			}
			r := httptest.NewRequestWithContext(t.Context(), tc.method, Path+"?"+tc.query, nil)
			if tc.user != "" {
				r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: tc.user}))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
				t.Errorf("got %d %.500s, want %d with %s", w.Code, w.Body.String(), tc.status, tc.body)
			}
			if !json.Valid(w.Body.Bytes()) {
				t.Errorf("the body is not JSON: %.500s", w.Body.String())
			}
		})
	}
	if asked == nil || asked.GetVerb() != "list" || asked.GetResource() != "managedclusters" || asked.GetAPIGroup() != "cluster.open-cluster-management.io" {
		t.Errorf("authorised %+v, want list on managedclusters.cluster.open-cluster-management.io", asked)
	}
}
