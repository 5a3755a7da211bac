package candidates

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

func TestHandler(t *testing.T) {
	snap := snapshot(t, map[string]clusterSpec{"c": {nodes: []*corev1.Node{
		ut.MakeNode("n").Label(name, "n").Resource(corev1.ResourceCPU, "8").Obj(),
	}}})
	fleet := func() (*framework.Snapshot, time.Time) { return snap, now }
	var asked authorizer.Attributes
	authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		asked = a
		if a.GetUser().GetName() == "alice" {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
	h := Handler(fleet, authz)
	cases := map[string]struct {
		user, method, query string
		status              int
		body                string
	}{
		"answer":          {"alice", http.MethodGet, "resources=cpu:2", http.StatusOK, `"c/`},
		"bad query":       {"alice", http.MethodGet, "resources=cpu:0", http.StatusBadRequest, `"detail":"resources: cpu: the amount must be positive`},
		"not allowed":     {"mallory", http.MethodGet, "resources=cpu:2", http.StatusForbidden, `cannot list managedclusters`},
		"unauthenticated": {"", http.MethodGet, "resources=cpu:2", http.StatusUnauthorized, `unauthenticated`},
		"not a GET":       {"alice", http.MethodPost, "resources=cpu:2", http.StatusMethodNotAllowed, `only GET`},
	}
	for title, tc := range cases {
		t.Run(title, func(t *testing.T) {
			r := httptest.NewRequestWithContext(t.Context(), tc.method, Path+"?"+tc.query, nil)
			if tc.user != "" {
				r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: tc.user}))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
				t.Errorf("got %d %s, want %d with %s", w.Code, w.Body.String(), tc.status, tc.body)
			}
			if !json.Valid(w.Body.Bytes()) {
				t.Errorf("the body is not JSON: %s", w.Body.String())
			}
		})
	}
	if asked == nil || asked.GetVerb() != "list" || asked.GetResource() != "managedclusters" || asked.GetAPIGroup() != "cluster.open-cluster-management.io" {
		t.Errorf("authorised %+v, want list on managedclusters.cluster.open-cluster-management.io", asked)
	}
}
