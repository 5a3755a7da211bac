package emco

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	kubefake "k8s.io/client-go/kubernetes/fake"

	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	"github.com/fleetfit/fleetfit/pkg/hubauth"
)

// allowEditor allows the user "editor" everything on hpaintents, and nobody anything else.
type allowEditor struct{ seen *[]authorizer.Attributes }

func (a allowEditor) Authorize(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	*a.seen = append(*a.seen, attrs)
	if attrs.GetUser().GetName() == "editor" && attrs.GetResource() == "hpaintents" && attrs.GetAPIGroup() == "fleetfit.io" {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no rule", nil
}

// TestRequestsBeforeTheIntent covers what is decided before any HPAIntent is read: who the
// caller is and may do, the project, the path and the body. The user comes from the header
// X-Test-User, as the hub's authentication filter would put it in the context.
func TestRequestsBeforeTheIntent(t *testing.T) {
	var seen []authorizer.Attributes
	h := New(Clients{
		Kube:     kubefake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "proj"}}),
		Fleetfit: fleetfitfake.NewSimpleClientset(),
	}, hubauth.New(nil, allowEditor{seen: &seen}))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch name := r.Header.Get("X-Test-User"); name {
		case "":
		case user.Anonymous:
			r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: name, Groups: []string{user.AllUnauthenticated}}))
		default:
			r = r.WithContext(request.WithUser(r.Context(), &user.DefaultInfo{Name: name, Groups: []string{user.AllAuthenticated}}))
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	intents := "/v2/projects/proj/composite-apps/capp/v1/deployment-intent-groups/dig/hpa-intents"

	cases := map[string]struct {
		user, method, path, body string
		want                     int
		wantMessage              string
		wantVerb                 string
	}{
		"no user":               {method: http.MethodGet, path: intents, want: http.StatusUnauthorized, wantMessage: "Unauthorized"},
		"anonymous":             {user: user.Anonymous, method: http.MethodGet, path: intents, want: http.StatusUnauthorized, wantMessage: "Unauthorized"},
		"not allowed":           {user: "mallory", method: http.MethodGet, path: intents, want: http.StatusForbidden, wantMessage: `user \"mallory\" cannot list hpaintents.fleetfit.io in the namespace \"proj\": no rule`, wantVerb: "list"},
		"not allowed to add":    {user: "mallory", method: http.MethodPost, path: intents + "/i/hpa-resource-consumers", body: "{}", want: http.StatusForbidden, wantVerb: "update"},
		"not allowed to delete": {user: "mallory", method: http.MethodDelete, path: intents + "/i", want: http.StatusForbidden, wantVerb: "delete"},
		"no such project":       {user: "editor", method: http.MethodGet, path: strings.Replace(intents, "/proj/", "/other/", 1), want: http.StatusNotFound, wantMessage: `project "other" not found`, wantVerb: "list"},
		"no label":              {user: "editor", method: http.MethodGet, path: strings.Replace(intents, "/dig/", "/-dig-/", 1), want: http.StatusBadRequest, wantMessage: `deployment intent group "-dig-"`, wantVerb: "list"},
		"empty body":            {user: "editor", method: http.MethodPost, path: intents, want: http.StatusBadRequest, wantMessage: "the body is empty", wantVerb: "create"},
		"not JSON":              {user: "editor", method: http.MethodPost, path: intents, body: "metadata: {name: x}", want: http.StatusBadRequest, wantMessage: "the body is not a JSON object of an HPA intent", wantVerb: "create"},
		"consumers in an intent": {user: "editor", method: http.MethodPost, path: intents, body: `{"metadata":{"name":"x"},"spec":{"app":"a","resourceConsumers":[]}}`,
			want: http.StatusBadRequest, wantMessage: "spec.resourceConsumers: Forbidden", wantVerb: "create"},
		"two spellings of app": {user: "editor", method: http.MethodPost, path: intents, body: `{"metadata":{"name":"x"},"spec":{"app":"a","appName":"b"}}`,
			want: http.StatusBadRequest, wantMessage: "spec.appName: Invalid value", wantVerb: "create"},
		"repeated field": {user: "editor", method: http.MethodPost, path: intents, body: `{"metadata":{"name":"x","name":"y"},"spec":{"app":"a"}}`,
			want: http.StatusBadRequest, wantMessage: `duplicate field "metadata.name"`, wantVerb: "create"},
		"requirements in a consumer": {user: "editor", method: http.MethodPut, path: intents + "/i/hpa-resource-consumers/c",
			body: `{"metadata":{"name":"c"},"spec":{"consumer":{"apiVersion":"apps/v1","kind":"Deployment","name":"c"},"resourceRequirements":[]}}`,
			want: http.StatusBadRequest, wantMessage: "spec.resourceRequirements: Forbidden", wantVerb: "update"},
		"unknown path": {user: "editor", method: http.MethodGet, path: intents + "/i/other", want: http.StatusNotFound},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			seen = nil
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Test-User", tc.user)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.want || !strings.Contains(string(body), tc.wantMessage) {
				t.Errorf("%d %q, want %d with %q", resp.StatusCode, body, tc.want, tc.wantMessage)
			}
			switch {
			case tc.wantVerb == "" && len(seen) > 0:
				t.Errorf("authorised %+v, want no SubjectAccessReview", seen)
			case tc.wantVerb != "" && (len(seen) != 1 || seen[0].GetVerb() != tc.wantVerb || seen[0].GetNamespace() == ""):
				t.Errorf("authorised %+v, want one %s in the project's namespace", seen, tc.wantVerb)
			}
		})
	}
}
