package hubauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// tokens authenticates as the hub's delegating authenticator does: a known bearer token is
// its user, an unknown one an error, and no token the anonymous user.
var tokens = authenticator.RequestFunc(func(r *http.Request) (*authenticator.Response, bool, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	switch {
	case !ok:
		return &authenticator.Response{User: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}}, true, nil
	case token == "alice", token == "mallory", token == "broken":
		return &authenticator.Response{User: &user.DefaultInfo{Name: token, Groups: []string{user.AllAuthenticated}}}, true, nil
	default:
		return nil, false, errors.New("unknown token")
	}
})

func TestDoor(t *testing.T) {
	intents := Access{Verb: "list", Group: "fleetfit.io", Version: "v1alpha1", Resource: "hpaintents", Namespace: "proj"}
	placement := Access{Verb: "get", Group: "cluster.open-cluster-management.io", Resource: "placements", Namespace: "ns", Name: "p"}
	clusters := Access{Verb: "list", Group: "cluster.open-cluster-management.io", Resource: "managedclusters"}
	metrics := Access{Verb: "get", Path: "/metrics"}
	status := func(code int32, reason metav1.StatusReason, msg string, details *metav1.StatusDetails) *metav1.Status {
		return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Code: code, Reason: reason, Message: msg, Details: details}
	}
	const unauth = "unauthenticated: present a bearer token or a client certificate the hub accepts"
	cases := map[string]struct {
		token string
		// inside serves the request behind Authenticate, with caller (maybe none) put in the
		// context as-is, as an endpoint's own tests do.
		inside bool
		caller *user.DefaultInfo
		access Access
		// want is nil for a request served.
		want      *metav1.Status
		wantAsked authorizer.Attributes
	}{
		"allowed": {token: "alice", access: intents,
			wantAsked: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}, Verb: "list",
				ResourceRequest: true, APIGroup: "fleetfit.io", APIVersion: "v1alpha1", Resource: "hpaintents", Namespace: "proj"}},
		"allowed a path": {token: "alice", access: metrics,
			wantAsked: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}, Verb: "get", Path: "/metrics"}},
		"no credentials":      {access: intents, want: status(401, metav1.StatusReasonUnauthorized, unauth, nil)},
		"refused credentials": {token: "forged", access: intents, want: status(401, metav1.StatusReasonUnauthorized, unauth, nil)},
		"no caller inside":    {inside: true, access: intents, want: status(401, metav1.StatusReasonUnauthorized, unauth, nil)},
		"anonymous inside": {inside: true, caller: &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}, access: intents,
			want: status(401, metav1.StatusReasonUnauthorized, unauth, nil)},
		"forbidden in a namespace": {token: "mallory", access: intents,
			want: status(403, metav1.StatusReasonForbidden, `user "mallory" cannot list hpaintents.fleetfit.io in the namespace "proj": no rule`,
				&metav1.StatusDetails{Group: "fleetfit.io", Kind: "hpaintents"}),
			wantAsked: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "mallory", Groups: []string{user.AllAuthenticated}}, Verb: "list",
				ResourceRequest: true, APIGroup: "fleetfit.io", APIVersion: "v1alpha1", Resource: "hpaintents", Namespace: "proj"}},
		"forbidden by name": {token: "mallory", access: placement,
			want: status(403, metav1.StatusReasonForbidden, `user "mallory" cannot get placements.cluster.open-cluster-management.io "p" in the namespace "ns": no rule`,
				&metav1.StatusDetails{Group: "cluster.open-cluster-management.io", Kind: "placements", Name: "p"}),
			wantAsked: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "mallory", Groups: []string{user.AllAuthenticated}}, Verb: "get",
				ResourceRequest: true, APIGroup: "cluster.open-cluster-management.io", Resource: "placements", Namespace: "ns", Name: "p"}},
		"forbidden cluster-wide": {token: "mallory", access: clusters,
			want: status(403, metav1.StatusReasonForbidden, `user "mallory" cannot list managedclusters.cluster.open-cluster-management.io: no rule`,
				&metav1.StatusDetails{Group: "cluster.open-cluster-management.io", Kind: "managedclusters"}),
			wantAsked: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "mallory", Groups: []string{user.AllAuthenticated}}, Verb: "list",
				ResourceRequest: true, APIGroup: "cluster.open-cluster-management.io", Resource: "managedclusters"}},
		"forbidden a path": {token: "mallory", access: metrics,
			want:      status(403, metav1.StatusReasonForbidden, `user "mallory" cannot get path "/metrics": no rule`, nil),
			wantAsked: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "mallory", Groups: []string{user.AllAuthenticated}}, Verb: "get", Path: "/metrics"}},
		"no answer": {token: "broken", access: clusters,
			want: status(500, metav1.StatusReasonInternalError,
				`the hub could not check whether user "broken" may list managedclusters.cluster.open-cluster-management.io: the API server is away`,
				&metav1.StatusDetails{Group: "cluster.open-cluster-management.io", Kind: "managedclusters"}),
			wantAsked: authorizer.AttributesRecord{User: &user.DefaultInfo{Name: "broken", Groups: []string{user.AllAuthenticated}}, Verb: "list",
				ResourceRequest: true, APIGroup: "cluster.open-cluster-management.io", Resource: "managedclusters"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var asked authorizer.Attributes
			authz := authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
				asked = a
				switch a.GetUser().GetName() {
				case "alice":
					return authorizer.DecisionAllow, "", nil
				case "broken":
					return authorizer.DecisionNoOpinion, "", errors.New("the API server is away")
				default:
					return authorizer.DecisionNoOpinion, "no rule", nil
				}
			})
			door := New(tokens, authz)
			var h http.Handler = door.Require(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, "served")
			}), func(*http.Request) Access { return tc.access })
			if !tc.inside {
				h = door.Authenticate(h)
			}
			r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/anything", nil)
			if tc.token != "" {
				r.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.caller != nil {
				r = r.WithContext(request.WithUser(r.Context(), tc.caller))
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)

			if tc.want == nil {
				if w.Code != http.StatusOK || w.Body.String() != "served" {
					t.Errorf("got %d %q, want the request served", w.Code, w.Body.String())
				}
			} else {
				var got metav1.Status
				if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
					t.Fatalf("the body %q is no Status: %v", w.Body.String(), err)
				}
				if diff := cmp.Diff(tc.want, &got); diff != "" || w.Code != int(tc.want.Code) {
					t.Errorf("code %d, want %d; Status (-want,+got):\n%s", w.Code, tc.want.Code, diff)
				}
				if ct := w.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want application/json", ct)
				}
			}
			if diff := cmp.Diff(tc.wantAsked, asked); diff != "" {
				t.Errorf("SubjectAccessReview (-want,+got):\n%s", diff)
			}
		})
	}
}
