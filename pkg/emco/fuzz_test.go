package emco

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzHandler sends any request (a method, a path and query, a body as JSON or YAML) to the
// handler on a fake hub holding the intent i with the consumer c. It is never answered with
// a 5xx nor panics, and whatever a POST creates can be read back at its path.
func FuzzHandler(f *testing.F) {
	requirement := `{"metadata": {"name": "cpu"}, "spec": {"allocatable": true, "name": "cpu", "requests": 2, "limits": 4}}`
	for _, seed := range []struct {
		method uint8
		target string
		yaml   bool
		body   string
	}{
		{1, fakeIntents, false, `{"metadata": {"name": "x", "description": "d"}, "spec": {"app": "app"}}`},
		{1, fakeIntents, true, "metadata: {name: x}\nspec: {app: Fw All}\n"},
		{1, fakeIntents, true, "metadata: {name: x}\n---\nmetadata: {name: y}\n"},
		{1, fakeIntents, true, "metadata:\n  name: x\n  name: y\nspec: {app: a}\n"},
		{1, fakeIntent + "/hpa-resource-consumers", false, `{"metadata": {"name": ".."}, "spec": {"consumer": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w", "container-name": "m"}}}`},
		{1, fakeIntent + "/hpa-resource-consumers", true, "metadata: {name: web}\nspec: {consumer: {apiVersion: apps/v1, kind: StatefulSet, name: web, container-name: nginx}}\n"},
		{1, fakeConsumer + "/resource-requirements", false, requirement},
		{1, fakeConsumer + "/resource-requirements", false, `{"metadata": {"name": "m"}, "spec": {"allocatable": true, "name": "memory", "requests": 1e-1000, "units": "MB"}}`},
		{1, fakeConsumer + "/resource-requirements", false, `{"metadata": {"name": "gpu"}, "spec": {"allocatable": false, "name": "nvidia.com/gpu.product", "value": "A100"}}`},
		{2, fakeConsumer + "/resource-requirements/cpu", false, requirement},
		{2, fakeIntent, false, `{"metadata": {"name": "i"}, "spec": {"appName": "app"}}`},
		{0, fakeIntents + "/%2e%2e", false, ""},
		{0, fakeIntents + "?labelSelector=x=y&limit=-1", false, ""},
		{0, "/v2/projects/a%2Fb/composite-apps/capp/v1/deployment-intent-groups/dig/hpa-intents", false, ""},
		{0, fakeIntent + "/status", false, ""},
		{3, fakeConsumer, false, ""},
		{3, fakeIntent, false, ""},
		{4, fakeIntent, false, "{}"},
	} {
		f.Add(seed.method, seed.target, seed.yaml, seed.body)
	}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch}
	f.Fuzz(func(t *testing.T, method uint8, target string, yaml bool, body string) {
		h := newFakeHub()
		contentType := "application/json"
		if yaml {
			contentType = "application/yaml"
		}
		m := methods[int(method)%len(methods)]
		code, answer, ok := h.do(t.Context(), m, target, contentType, body)
		if !ok {
			return
		}
		if code >= 500 || code < 100 {
			t.Fatalf("%s %q with %q: %d %s", m, target, body, code, answer)
		}
		if m != http.MethodPost || code != http.StatusCreated {
			return
		}
		var created struct {
			Metadata struct{ Name string }
		}
		if err := json.Unmarshal([]byte(answer), &created); err != nil {
			t.Fatalf("POST %q: 201 with %q: %v", target, answer, err)
		}
		path, _, _ := strings.Cut(target, "?")
		again := path + "/" + url.PathEscape(created.Metadata.Name)
		if code, answer, _ := h.do(t.Context(), http.MethodGet, again, "", ""); code != http.StatusOK {
			t.Fatalf("POST %q with %q created %q, but GET %s: %d %s", target, body, created.Metadata.Name, again, code, answer)
		}
	})
}
