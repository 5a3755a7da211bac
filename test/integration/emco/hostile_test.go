package emco

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFortyConcurrentRequirements: 40 requirements posted at once to one intent, ten to each
// of its four consumers, all land (201), with their metadata: none is answered 409, which
// EMCO's clients read as "already exists".
func TestFortyConcurrentRequirements(t *testing.T) {
	const consumers, perConsumer = 4, 10
	e := newEnv(t, "forty")
	c := e.client(editor)
	c.must(http.StatusCreated, http.MethodPost, "", "application/json", `{"metadata": {"name": "busy"}, "spec": {"app": "busy"}}`, nil)
	for i := range consumers {
		c.must(http.StatusCreated, http.MethodPost, "/busy/hpa-resource-consumers", "application/json",
			fmt.Sprintf(`{"metadata": {"name": "c%d"}, "spec": {"consumer": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "c%d", "container-name": "main"}}}`, i, i), nil)
	}
	n := consumers * perConsumer
	codes, answers := make([]int, n), make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			path := fmt.Sprintf("/busy/hpa-resource-consumers/c%d/resource-requirements", i%consumers)
			// Optional, so that several may ask for the same resource.
			body := fmt.Sprintf(`{"metadata": {"name": "r%02d", "description": "requirement %d"}, "spec": {"allocatable": true, "mandatory": false, "weight": %d, "name": "example.com/r%d", "requests": %d}}`, i, i, i%10+1, i, i+1)
			codes[i], answers[i] = c.do(context.Background(), http.MethodPost, path, "application/json", []byte(body))
		})
	}
	wg.Wait()
	var want, got []string
	for i := range n {
		want = append(want, fmt.Sprintf("c%d/r%02d: requirement %d", i%consumers, i, i))
		if codes[i] != http.StatusCreated {
			t.Errorf("POST r%02d: status %d: %s", i, codes[i], answers[i])
		}
	}
	in := e.intent("busy")
	parts := in.Annotations["emco.fleetfit.io/parts"]
	for _, cons := range in.Spec.Consumers {
		for _, r := range cons.Requirements {
			var answer struct {
				Metadata struct{ Description string }
			}
			c.must(http.StatusOK, http.MethodGet, "/busy/hpa-resource-consumers/"+cons.Name+"/resource-requirements/"+r.Name, "", "", &answer)
			got = append(got, cons.Name+"/"+r.Name+": "+answer.Metadata.Description)
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requirements of the intent (-want,+got):\n%s\nparts: %s", diff, parts)
	}
}

// TestHostileRequests: over HTTPS, as the hub serves the API, names no object can have,
// bodies JSON would refuse sent as YAML, fields that cannot resolve and query parameters get
// a 4xx naming the field, parameter or rule, never a 5xx, and change nothing.
func TestHostileRequests(t *testing.T) {
	e := newEnv(t, "hostile")
	c := e.client(editor)
	c.must(http.StatusCreated, http.MethodPost, "", "application/json", `{"metadata": {"name": "i"}, "spec": {"app": "app"}}`, nil)
	c.must(http.StatusCreated, http.MethodPost, "/i/hpa-resource-consumers", "application/json",
		`{"metadata": {"name": "web"}, "spec": {"consumer": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "container-name": "nginx"}}}`, nil)
	// Paths of other projects, asked by the hub's admin, whom every project's
	// hpaintents are open to: the editor would only get a 403 there.
	root := &client{t: t, http: e.clientFor(fleet.Hub.AdminConfig()).http, base: strings.Split(e.base, "/v2/")[0]}
	cases := []struct {
		name, method, path, contentType, body string
		// root: path starts at /v2, not at the intents of the project, and is asked by the admin.
		root        bool
		want        int
		wantMessage string
	}{
		{name: "intent ..", method: http.MethodGet, path: "/%2e%2e", want: http.StatusNotFound, wantMessage: `hpa intent ".." not found: a lowercase RFC 1123 subdomain`},
		{name: "intent a/b", method: http.MethodGet, path: "/a%2Fb", want: http.StatusNotFound, wantMessage: `hpa intent "a/b" not found`},
		{name: "intent a%b", method: http.MethodDelete, path: "/a%25b", want: http.StatusNotFound, wantMessage: `hpa intent "a%b" not found`},
		{name: "project ..", method: http.MethodGet, root: true, path: "/v2/projects/%2e%2e/composite-apps/my-capp1/v1.0/deployment-intent-groups/my-dig1/hpa-intents", want: http.StatusNotFound, wantMessage: `project ".." not found`},
		{name: "project a/b", method: http.MethodGet, root: true, path: "/v2/projects/a%2Fb/composite-apps/my-capp1/v1.0/deployment-intent-groups/my-dig1/hpa-intents/i", want: http.StatusNotFound, wantMessage: `project "a/b" not found`},
		{name: "consumer ..", method: http.MethodPost, path: "/i/hpa-resource-consumers", contentType: "application/json",
			body: `{"metadata": {"name": ".."}, "spec": {"consumer": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "x", "container-name": "nginx"}}}`,
			want: http.StatusBadRequest, wantMessage: `metadata.name: Invalid value: ".."`},
		{name: "requirement .", method: http.MethodPost, path: "/i/hpa-resource-consumers/web/resource-requirements", contentType: "application/json",
			body: `{"metadata": {"name": "."}, "spec": {"allocatable": true, "name": "cpu", "requests": 1}}`, want: http.StatusBadRequest, wantMessage: `metadata.name: Invalid value: "."`},
		{name: "two YAML documents", method: http.MethodPost, path: "/i/hpa-resource-consumers/web/resource-requirements", contentType: "application/yaml",
			body: "metadata: {name: a}\nspec: {allocatable: true, name: cpu, requests: 1}\n---\nmetadata: {name: b}\nspec: {allocatable: true, name: memory, requests: 1}\n",
			want: http.StatusBadRequest, wantMessage: "the body holds 2 YAML documents"},
		{name: "a YAML key twice", method: http.MethodPost, path: "/i/hpa-resource-consumers/web/resource-requirements", contentType: "application/yaml",
			body: "metadata: {name: a}\nspec:\n  allocatable: true\n  name: cpu\n  requests: 1\n  requests: 2\n", want: http.StatusBadRequest, wantMessage: `duplicate field "requests"`},
		{name: "app that is no Placement name", method: http.MethodPost, contentType: "application/json", body: `{"metadata": {"name": "fw"}, "spec": {"app": "Fw All"}}`,
			want: http.StatusBadRequest, wantMessage: `spec.app: Invalid value: "Fw All"`},
		{name: "exponent of four digits", method: http.MethodPost, path: "/i/hpa-resource-consumers/web/resource-requirements", contentType: "application/json",
			body: `{"metadata": {"name": "cpu"}, "spec": {"allocatable": true, "name": "cpu", "requests": 1e-1000}}`, want: http.StatusBadRequest, wantMessage: `spec.requests: Invalid value: "1e-1000"`},
		{name: "query parameters", method: http.MethodGet, path: "?labelSelector=x=y&limit=-1", want: http.StatusBadRequest, wantMessage: `unknown query parameter "labelSelector"`},
	}
	for _, tc := range cases {
		before := e.written("i")
		cl, path := c, tc.path
		if tc.root {
			cl = root
		}
		code, body := cl.do(t.Context(), tc.method, path, tc.contentType, []byte(tc.body))
		if code != tc.want || !strings.Contains(body, tc.wantMessage) {
			t.Errorf("%s: %s %s: %d %q, want %d with %q", tc.name, tc.method, tc.path, code, body, tc.want, tc.wantMessage)
		}
		if after := e.written("i"); after != before {
			t.Errorf("%s: the refused request changed the intent (%s, then %s)", tc.name, before, after)
		}
	}
}
