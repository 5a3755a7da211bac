package emco

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatusCodes sends requests one after another, each answered by its status code and a
// message; later requests depend on what earlier ones made, so the table is a list. Where a
// request fails, it checks that the HPAIntent did not change.
func TestStatusCodes(t *testing.T) {
	e := newEnv(t, "codes")
	e.createPlacement("app")
	as := map[string]*client{"": e.client(""), editor: e.client(editor), viewer: e.client(viewer), stranger: e.client(stranger), updater: e.client(updater)}
	admin := e.clientFor(fleet.Hub.AdminConfig())
	const (
		intent       = "/app-intent"
		consumers    = intent + "/hpa-resource-consumers"
		consumer     = consumers + "/web"
		requirements = consumer + "/resource-requirements"
		requirement  = requirements + "/cpu"
	)
	intentBody := `{"metadata": {"name": "app-intent", "description": "d"}, "spec": {"app": "app"}}`
	consumerBody := `{"metadata": {"name": "web"}, "spec": {"consumer": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "container-name": "nginx"}}}`
	requirementBody := func(spec string) string { return `{"metadata": {"name": "cpu"}, "spec": {` + spec + `}}` }
	cpu := requirementBody(`"allocatable": true, "name": "cpu", "requests": 2, "limits": 4`)

	cases := []struct {
		name         string
		user         string
		method, path string
		body         string
		yaml         bool
		want         int
		wantMessage  string
		// unchanged: the request fails and the intent keeps its spec and annotations.
		unchanged bool
	}{
		{name: "no credentials", method: http.MethodGet, want: http.StatusUnauthorized, wantMessage: "Unauthorized"},
		{name: "no right to list", user: stranger, method: http.MethodGet, want: http.StatusForbidden, wantMessage: `user \"emco-stranger\" cannot list hpaintents.fleetfit.io`},
		{name: "no right to create", user: viewer, method: http.MethodPost, body: intentBody, want: http.StatusForbidden, wantMessage: `cannot create hpaintents.fleetfit.io`},
		{name: "empty list", user: viewer, method: http.MethodGet, want: http.StatusOK, wantMessage: "[]"},
		{name: "unknown field", user: editor, method: http.MethodPost, body: `{"metadata": {"name": "x"}, "spec": {"app": "app", "color": "red"}}`, want: http.StatusBadRequest, wantMessage: `unknown field "spec.color"`},
		{name: "unknown field in YAML", user: editor, method: http.MethodPost, yaml: true, body: "metadata: {name: x}\nspec: {app: app, colour: red}\n", want: http.StatusBadRequest, wantMessage: `unknown field "spec.colour"`},
		{name: "wrong type", user: editor, method: http.MethodPost, body: `{"metadata": {"name": 7}, "spec": {"app": "app"}}`, want: http.StatusBadRequest, wantMessage: "metadata.name: Invalid value: a JSON number: must be a string"},
		{name: "no app", user: editor, method: http.MethodPost, body: `{"metadata": {"name": "x"}, "spec": {}}`, want: http.StatusBadRequest, wantMessage: "spec.app: Invalid value: \"\": should be at least 1 chars long"},
		{name: "bad intent name", user: editor, method: http.MethodPost, body: `{"metadata": {"name": "Not_A_Name"}, "spec": {"app": "app"}}`, want: http.StatusBadRequest, wantMessage: "metadata.name: Invalid value: \"Not_A_Name\""},
		{name: "create intent", user: editor, method: http.MethodPost, body: intentBody, want: http.StatusCreated, wantMessage: `"description":"d"`},
		{name: "intent exists", user: editor, method: http.MethodPost, body: intentBody, want: http.StatusConflict, wantMessage: `hpa intent "app-intent" already exists`, unchanged: true},
		{name: "missing intent", user: editor, method: http.MethodGet, path: "/other", want: http.StatusNotFound, wantMessage: `hpa intent "other" not found`},
		{name: "missing project", user: "admin", method: http.MethodGet, path: "@nope/composite-apps/my-capp1/v1.0/deployment-intent-groups/my-dig1/hpa-intents", want: http.StatusNotFound, wantMessage: `project "nope" not found`},
		{name: "consumer to a missing intent", user: editor, method: http.MethodPost, path: "/other/hpa-resource-consumers", body: consumerBody, want: http.StatusNotFound, wantMessage: `hpa intent "other" not found`},
		{name: "consumer of an unknown kind", user: editor, method: http.MethodPost, path: consumers, body: strings.Replace(consumerBody, "Deployment", "Widget", 1), want: http.StatusBadRequest, wantMessage: `spec.consumer.kind: Unsupported value: "Widget"`, unchanged: true},
		{name: "create consumer", user: editor, method: http.MethodPost, path: consumers, body: consumerBody, want: http.StatusCreated, wantMessage: `"container-name":"nginx"`},
		{name: "consumer exists", user: editor, method: http.MethodPost, path: consumers, body: consumerBody, want: http.StatusConflict, wantMessage: `hpa resource consumer "web" already exists`, unchanged: true},
		{name: "requirement to a missing consumer", user: editor, method: http.MethodPost, path: consumers + "/db/resource-requirements", body: cpu, want: http.StatusNotFound, wantMessage: `hpa resource consumer "db" not found`, unchanged: true},
		{name: "allocatable missing", user: editor, method: http.MethodPost, path: requirements, body: requirementBody(`"name": "cpu", "requests": 2`), want: http.StatusBadRequest, wantMessage: "spec.allocatable: Required value", unchanged: true},
		{name: "weight of the wrong type", user: editor, method: http.MethodPost, path: requirements, body: requirementBody(`"allocatable": true, "name": "cpu", "requests": 2, "mandatory": false, "weight": "high"`), want: http.StatusBadRequest, wantMessage: "spec.weight: Invalid value: a JSON string: must be an integer", unchanged: true},
		{name: "weight out of range", user: editor, method: http.MethodPost, path: requirements, body: requirementBody(`"allocatable": true, "name": "cpu", "requests": 2, "mandatory": false, "weight": 11`), want: http.StatusBadRequest, wantMessage: "spec.weight: Invalid value: 11: should be less than or equal to 10", unchanged: true},
		{name: "weight of a mandatory requirement", user: editor, method: http.MethodPost, path: requirements, body: requirementBody(`"allocatable": true, "name": "cpu", "requests": 2, "weight": 3`), want: http.StatusBadRequest, wantMessage: "weight ranks optional requirements only: set mandatory: false, or remove weight", unchanged: true},
		{name: "requests above limits", user: editor, method: http.MethodPost, path: requirements, body: requirementBody(`"allocatable": true, "name": "cpu", "requests": 3, "limits": 2`), want: http.StatusBadRequest, wantMessage: "requests (3) must not exceed limits (2)", unchanged: true},
		{name: "unknown units", user: editor, method: http.MethodPost, path: requirements, body: requirementBody(`"allocatable": true, "name": "memory", "requests": 2, "units": "XB"`), want: http.StatusBadRequest, wantMessage: `spec.units: Unsupported value: "XB"`, unchanged: true},
		{name: "amount not a number", user: editor, method: http.MethodPost, path: requirements, body: requirementBody(`"allocatable": true, "name": "cpu", "requests": true`), want: http.StatusBadRequest, wantMessage: "spec.requests: Invalid value", unchanged: true},
		{name: "label with requests", user: editor, method: http.MethodPost, path: requirements, body: requirementBody(`"allocatable": false, "key": "gpu", "value": "a100", "requests": 1`), want: http.StatusBadRequest, wantMessage: "spec.requests: Forbidden", unchanged: true},
		{name: "create requirement", user: editor, method: http.MethodPost, path: requirements, body: cpu, want: http.StatusCreated, wantMessage: `"requests":2,"limits":4`},
		{name: "requirement exists", user: editor, method: http.MethodPost, path: requirements, body: cpu, want: http.StatusConflict, wantMessage: `resource requirement "cpu" already exists`, unchanged: true},
		{name: "a second mandatory cpu", user: editor, method: http.MethodPost, path: requirements, body: strings.Replace(cpu, `"name": "cpu"}`, `"name": "cpu2"}`, 1), want: http.StatusBadRequest, wantMessage: "two mandatory requirements ask for amounts of the same resource", unchanged: true},
		{name: "node label", user: editor, method: http.MethodPost, path: requirements, body: `{"metadata": {"name": "turbo"}, "spec": {"allocatable": false, "name": "feature.node.kubernetes.io/cpu-pstate.turbo", "value": "true"}}`, want: http.StatusCreated, wantMessage: `"name":"feature.node.kubernetes.io/cpu-pstate.turbo","value":"true"`},
		{name: "get intent", user: viewer, method: http.MethodGet, path: intent, want: http.StatusOK, wantMessage: `"resourceRequirements":[{"metadata":{"name":"cpu"`},
		{name: "get consumers", user: viewer, method: http.MethodGet, path: consumers, want: http.StatusOK, wantMessage: `[{"metadata":{"name":"web"`},
		{name: "get requirements", user: viewer, method: http.MethodGet, path: requirements, want: http.StatusOK, wantMessage: `[{"metadata":{"name":"cpu"`},
		{name: "get requirement", user: viewer, method: http.MethodGet, path: requirement, want: http.StatusOK, wantMessage: `"requests":2`},
		{name: "missing requirement", user: viewer, method: http.MethodGet, path: requirements + "/gpu", want: http.StatusNotFound, wantMessage: `resource requirement "gpu" not found`},
		{name: "viewer may not change", user: viewer, method: http.MethodPut, path: requirement, body: cpu, want: http.StatusForbidden, wantMessage: "cannot update hpaintents", unchanged: true},
		{name: "put requirement", user: editor, method: http.MethodPut, path: requirement, body: strings.Replace(cpu, `"limits": 4`, `"limits": 8`, 1), want: http.StatusOK, wantMessage: `"limits":8`},
		{name: "put requirement of another name", user: editor, method: http.MethodPut, path: requirements + "/gpu", body: cpu, want: http.StatusBadRequest, wantMessage: "metadata.name", unchanged: true},
		{name: "put consumer with requirements", user: editor, method: http.MethodPut, path: consumer, body: consumerBody, want: http.StatusConflict, wantMessage: "delete its requirements first", unchanged: true},
		{name: "put intent with consumers", user: editor, method: http.MethodPut, path: intent, body: intentBody, want: http.StatusConflict, wantMessage: "delete its consumers first", unchanged: true},
		{name: "delete intent with consumers", user: editor, method: http.MethodDelete, path: intent, want: http.StatusConflict, wantMessage: "delete its consumers first", unchanged: true},
		{name: "delete consumer with requirements", user: editor, method: http.MethodDelete, path: consumer, want: http.StatusConflict, wantMessage: "delete its requirements first", unchanged: true},
		{name: "method not allowed", user: editor, method: http.MethodPatch, path: intent, want: http.StatusMethodNotAllowed},
		{name: "delete requirement", user: editor, method: http.MethodDelete, path: requirement, want: http.StatusNoContent},
		{name: "delete label requirement", user: editor, method: http.MethodDelete, path: requirements + "/turbo", want: http.StatusNoContent},
		{name: "delete missing requirement", user: editor, method: http.MethodDelete, path: requirement, want: http.StatusNotFound, wantMessage: `resource requirement "cpu" not found`, unchanged: true},
		{name: "put consumer", user: editor, method: http.MethodPut, path: consumer, body: strings.Replace(consumerBody, "nginx", "envoy", 1), want: http.StatusOK, wantMessage: `"container-name":"envoy"`},
		{name: "delete consumer", user: editor, method: http.MethodDelete, path: consumer, want: http.StatusNoContent},
		{name: "put intent", user: editor, method: http.MethodPut, path: intent, body: strings.Replace(intentBody, `"d"`, `"e"`, 1), want: http.StatusOK, wantMessage: `"description":"e"`},
		{name: "delete intent", user: editor, method: http.MethodDelete, path: intent, want: http.StatusNoContent},
		{name: "deleted intent", user: editor, method: http.MethodGet, path: intent, want: http.StatusNotFound, wantMessage: `hpa intent "app-intent" not found`},
		{name: "put of a new intent needs create", user: updater, method: http.MethodPut, path: "/other", body: `{"metadata": {"name": "other"}, "spec": {"app": "app"}}`, want: http.StatusForbidden, wantMessage: `user \"emco-updater\" cannot create hpaintents`},
		{name: "a name that is no namespace's", user: "admin", method: http.MethodGet, path: "@No_Project/composite-apps/my-capp1/v1.0/deployment-intent-groups/my-dig1/hpa-intents", want: http.StatusNotFound, wantMessage: `project "No_Project" not found`},
		{name: "put new intent", user: editor, method: http.MethodPut, path: "/other", body: `{"metadata": {"name": "other"}, "spec": {"app": "app"}}`, want: http.StatusCreated},
		{name: "same name in another deployment intent group", user: editor, method: http.MethodPost, path: "@{project}/composite-apps/my-capp1/v1.0/deployment-intent-groups/my-dig2/hpa-intents", body: `{"metadata": {"name": "other"}, "spec": {"app": "app"}}`, want: http.StatusConflict, wantMessage: "under another composite app, version or deployment intent group"},
		{name: "not seen from another deployment intent group", user: editor, method: http.MethodGet, path: "@{project}/composite-apps/my-capp1/v1.0/deployment-intent-groups/my-dig2/hpa-intents/other", want: http.StatusNotFound},
		{name: "a version that is no label", user: editor, method: http.MethodGet, path: "@{project}/composite-apps/my-capp1/v1.0~beta/deployment-intent-groups/my-dig1/hpa-intents", want: http.StatusBadRequest, wantMessage: `composite app version "v1.0~beta"`},
	}
	for _, tc := range cases {
		c := as[tc.user]
		if tc.user == "admin" {
			c = admin
		}
		path := tc.path
		if rest, ok := strings.CutPrefix(path, "@"); ok {
			// A path of its own, from the project on.
			c = &client{t: t, http: c.http, base: strings.Split(e.base, "/v2/")[0]}
			path = "/v2/projects/" + strings.ReplaceAll(rest, "{project}", e.project)
		}
		contentType := ""
		if tc.body != "" {
			contentType = "application/json"
			if tc.yaml {
				contentType = "application/yaml"
			}
		}
		before := e.written("app-intent")
		code, body := c.do(t.Context(), tc.method, path, contentType, []byte(tc.body))
		t.Logf("%s: %s %s: %d %s", tc.name, tc.method, tc.path, code, strings.TrimSpace(body))
		if code != tc.want || !strings.Contains(body, tc.wantMessage) {
			t.Errorf("%s: %s %s: %d %q, want %d with %q", tc.name, tc.method, tc.path, code, body, tc.want, tc.wantMessage)
		}
		if after := e.written("app-intent"); tc.unchanged && after != before {
			t.Errorf("%s: the failed request changed the intent (%s, then %s)", tc.name, before, after)
		}
	}
}

// written returns what requests write of an HPAIntent of the project: its generation, which
// any change of its spec increments, and its annotations; "" when there is none. (Its
// resourceVersion would also change with the status the hub writes.)
func (e *env) written(name string) string {
	in, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.project).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return fmt.Sprintf("generation %d, annotations %v", in.Generation, in.Annotations)
}
