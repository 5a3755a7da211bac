package emco

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHostileRequests: names no object can have, bodies JSON would refuse sent as YAML,
// fields that cannot resolve and query parameters are each answered with a 4xx that names
// the field, parameter or rule, and change nothing.
func TestHostileRequests(t *testing.T) {
	consumers := fakeIntent + "/hpa-resource-consumers"
	requirements := fakeConsumer + "/resource-requirements"
	consumer := func(name string) string {
		return `{"metadata": {"name": "` + name + `"}, "spec": {"consumer": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "container-name": "nginx"}}}`
	}
	requirement := func(name, spec string) string {
		return `{"metadata": {"name": "` + name + `"}, "spec": {` + spec + `}}`
	}
	type answer struct {
		Code int
		// Message is a part of the answer's body.
		Message string
	}
	cases := map[string]struct {
		method, target, contentType, body string
		want                              answer
	}{
		"intent . in a path":              {method: http.MethodGet, target: fakeIntents + "/%2e", want: answer{http.StatusNotFound, `hpa intent "." not found: a lowercase RFC 1123 subdomain`}},
		"intent .. in a path":             {method: http.MethodGet, target: fakeIntents + "/%2e%2e", want: answer{http.StatusNotFound, `hpa intent ".." not found`}},
		"intent with a slash in a path":   {method: http.MethodDelete, target: fakeIntents + "/a%2Fb", want: answer{http.StatusNotFound, `hpa intent "a/b" not found`}},
		"intent with a percent":           {method: http.MethodGet, target: fakeIntents + "/a%25b", want: answer{http.StatusNotFound, `hpa intent "a%b" not found`}},
		"consumers of intent ..":          {method: http.MethodPost, target: fakeIntents + "/%2e%2e/hpa-resource-consumers", body: consumer("web"), want: answer{http.StatusNotFound, `hpa intent ".." not found`}},
		"project ..":                      {method: http.MethodGet, target: "/v2/projects/%2e%2e/composite-apps/capp/v1/deployment-intent-groups/dig/hpa-intents", want: answer{http.StatusNotFound, `project ".." not found: a project is a namespace: a lowercase RFC 1123 label`}},
		"project with a slash":            {method: http.MethodGet, target: "/v2/projects/a%2Fb/composite-apps/capp/v1/deployment-intent-groups/dig/hpa-intents/i", want: answer{http.StatusNotFound, `project "a/b" not found`}},
		"consumer .. in a path":           {method: http.MethodGet, target: consumers + "/%2e%2e", want: answer{http.StatusNotFound, `hpa resource consumer ".." not found in hpa intent "i": a name must consist of alphanumeric characters`}},
		"requirement a/b in a path":       {method: http.MethodDelete, target: requirements + "/a%2Fb", want: answer{http.StatusNotFound, `resource requirement "a/b" not found in hpa resource consumer "c"`}},
		"consumer named .":                {method: http.MethodPost, target: consumers, body: consumer("."), want: answer{http.StatusBadRequest, `metadata.name: Invalid value: ".": a name must consist of`}},
		"consumer named ..":               {method: http.MethodPost, target: consumers, body: consumer(".."), want: answer{http.StatusBadRequest, `metadata.name: Invalid value: ".."`}},
		"consumer named a/b":              {method: http.MethodPut, target: consumers + "/ab", body: consumer("a/b"), want: answer{http.StatusBadRequest, `metadata.name: Invalid value: "a/b"`}},
		"consumer of an object no name":   {method: http.MethodPost, target: consumers, body: strings.Replace(consumer("web"), `"kind": "Deployment", "name": "web"`, `"kind": "Deployment", "name": "Web Server"`, 1), want: answer{http.StatusBadRequest, `spec.consumer.name: Invalid value: "Web Server"`}},
		"container that is no container":  {method: http.MethodPost, target: consumers, body: strings.Replace(consumer("web"), "nginx", "nginx.v2", 1), want: answer{http.StatusBadRequest, `spec.consumer.container-name: Invalid value: "nginx.v2"`}},
		"requirement named ..":            {method: http.MethodPost, target: requirements, body: requirement("..", `"allocatable": true, "name": "cpu", "requests": 1`), want: answer{http.StatusBadRequest, `metadata.name: Invalid value: ".."`}},
		"intent named ..":                 {method: http.MethodPost, target: fakeIntents, body: `{"metadata": {"name": ".."}, "spec": {"app": "app"}}`, want: answer{http.StatusBadRequest, `metadata.name: Invalid value: ".."`}},
		"app that is no Placement name":   {method: http.MethodPost, target: fakeIntents, body: `{"metadata": {"name": "x"}, "spec": {"app": "Fw All"}}`, want: answer{http.StatusBadRequest, `spec.app: Invalid value: "Fw All": the app's Placement has this name`}},
		"appName that is no Placement":    {method: http.MethodPost, target: fakeIntents, body: `{"metadata": {"name": "x"}, "spec": {"appName": "Fw_All"}}`, want: answer{http.StatusBadRequest, `spec.appName: Invalid value: "Fw_All"`}},
		"exponent of four digits":         {method: http.MethodPost, target: requirements, body: requirement("r", `"allocatable": true, "name": "cpu", "requests": 1e-1000`), want: answer{http.StatusBadRequest, `spec.requests: Invalid value: "1e-1000": an exponent has at most three digits`}},
		"exponent of four digits, quoted": {method: http.MethodPost, target: requirements, body: requirement("r", `"allocatable": true, "name": "cpu", "limits": "2E+0010"`), want: answer{http.StatusBadRequest, `spec.limits: Invalid value: "2E+0010"`}},
		"two YAML documents": {method: http.MethodPost, target: requirements, contentType: "application/yaml",
			body: "metadata: {name: a}\nspec: {allocatable: true, name: cpu, requests: 1}\n---\nmetadata: {name: b}\nspec: {allocatable: true, name: memory, requests: 1}\n",
			want: answer{http.StatusBadRequest, "the body holds 2 YAML documents: send one per request"}},
		"a YAML key twice": {method: http.MethodPost, target: fakeIntents, contentType: "application/yaml",
			body: "metadata:\n  name: x\n  name: y\nspec: {app: app}\n", want: answer{http.StatusBadRequest, `duplicate field "name" (line 3 of the body)`}},
		"only a YAML separator":        {method: http.MethodPost, target: fakeIntents, contentType: "application/yaml", body: "---\n# nothing\n", want: answer{http.StatusBadRequest, "the body holds no YAML document"}},
		"a label selector and a limit": {method: http.MethodGet, target: fakeIntents + "?labelSelector=x=y&limit=-1", want: answer{http.StatusBadRequest, `unknown query parameter "labelSelector": this API takes no query parameters`}},
		"a limit":                      {method: http.MethodGet, target: consumers + "?limit=1", want: answer{http.StatusBadRequest, `unknown query parameter "limit"`}},
		"a malformed query":            {method: http.MethodGet, target: fakeIntent + "?a=%zz", want: answer{http.StatusBadRequest, "the query \"a=%zz\" is malformed"}},
		// What is well formed still works.
		"a YAML body":            {method: http.MethodPost, target: consumers, contentType: "application/yaml", body: "# web\n---\nmetadata: {name: web}\nspec: {consumer: {apiVersion: apps/v1, kind: Deployment, name: web, container-name: nginx}}\n", want: answer{http.StatusCreated, `"name":"web"`}},
		"an EMCO name":           {method: http.MethodPost, target: requirements, body: requirement("core-fwall-RAM_needs.2", `"allocatable": true, "name": "memory", "requests": 1000, "units": "MB"`), want: answer{http.StatusCreated, `"requests":1000`}},
		"an empty query":         {method: http.MethodGet, target: fakeIntent + "?", want: answer{http.StatusOK, `"name":"i"`}},
		"a three-digit exponent": {method: http.MethodPost, target: requirements, body: requirement("r", `"allocatable": true, "name": "cpu", "requests": 2e-3`), want: answer{http.StatusCreated, `"requests":2e-3`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFakeHub()
			before := f.intent()
			contentType := tc.contentType
			if contentType == "" && tc.body != "" {
				contentType = "application/json"
			}
			code, body, ok := f.do(t.Context(), tc.method, tc.target, contentType, tc.body)
			if !ok {
				t.Fatalf("%s is no request target", tc.target)
			}
			got := answer{Code: code, Message: tc.want.Message}
			if !strings.Contains(body, tc.want.Message) {
				got.Message = body
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s %s: answer (-want,+got):\n%s", tc.method, tc.target, diff)
			}
			if code >= 300 {
				if diff := cmp.Diff(before, f.intent()); diff != "" {
					t.Errorf("the refused request changed the intent (-before,+after):\n%s", diff)
				}
			}
		})
	}
}
