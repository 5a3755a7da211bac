package emco

import (
	"errors"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestRestField maps the HPAIntent's field paths to the REST body's fields.
func TestRestField(t *testing.T) {
	in := utiltesting.MakeHPAIntent("i", "ns").Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("Deployment", "web", "nginx").Requirement(
			utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj(),
			utiltesting.MakeFeature("turbo", "feature.node.kubernetes.io/cpu-pstate.turbo").Values("true").Obj(),
		).Obj()).Obj()
	p := partsOf(in)
	p.requirement("web", "turbo").LabelAs = "name"
	p.store(in)
	web, cpu, turbo := location{consumer: "web"}, location{consumer: "web", requirement: "cpu"}, location{consumer: "web", requirement: "turbo"}
	cases := map[string]struct {
		path      string
		wantAt    location
		wantField string
	}{
		"app":                  {path: "spec.placementRef.name", wantField: "spec.app"},
		"intent name":          {path: "metadata.name", wantField: "metadata.name"},
		"consumers":            {path: "spec.consumers", wantField: "spec.consumers"},
		"consumer name":        {path: "spec.consumers[0].name", wantAt: web, wantField: "metadata.name"},
		"container":            {path: "spec.consumers[0].target.container", wantAt: web, wantField: "spec.consumer.container-name"},
		"kind":                 {path: "spec.consumers[0].target.kind", wantAt: web, wantField: "spec.consumer.kind"},
		"exclusiveCPU":         {path: "spec.consumers[0].exclusiveCPU", wantAt: web, wantField: "spec.exclusiveCPU"},
		"requirements":         {path: "spec.consumers[0].requirements", wantAt: web, wantField: "resource-requirements"},
		"requirement":          {path: "spec.consumers[0].requirements[0]", wantAt: cpu, wantField: "spec"},
		"requirement name":     {path: "spec.consumers[0].requirements[0].name", wantAt: cpu, wantField: "metadata.name"},
		"requests":             {path: "spec.consumers[0].requirements[0].resource.requests", wantAt: cpu, wantField: "spec.requests"},
		"resource name":        {path: "spec.consumers[0].requirements[0].resource.name", wantAt: cpu, wantField: "spec.name"},
		"weight":               {path: "spec.consumers[0].requirements[0].weight", wantAt: cpu, wantField: "spec.weight"},
		"label posted as name": {path: "spec.consumers[0].requirements[1].feature.key", wantAt: turbo, wantField: "spec.name"},
		"label value":          {path: "spec.consumers[0].requirements[1].feature.values", wantAt: turbo, wantField: "spec.values"},
		"no such consumer":     {path: "spec.consumers[3].name", wantField: "spec.consumers[3].name"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			at, f := restField(in, tc.path, labelField(in))
			if at != tc.wantAt || f != tc.wantField {
				t.Errorf("restField(%s) = %v, %s; want %v, %s", tc.path, at, f, tc.wantAt, tc.wantField)
			}
		})
	}
}

// TestFieldMessage: a problem elsewhere in the intent than the part a request is about says
// where it is.
func TestFieldMessage(t *testing.T) {
	in := utiltesting.MakeHPAIntent("i", "ns").Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("Deployment", "web", "").Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj()).Obj()
	cases := map[string]struct {
		at   location
		path string
		want string
	}{
		"the part itself": {at: location{consumer: "web", requirement: "cpu"}, path: "spec.consumers[0].requirements[0].resource.requests",
			want: "spec.requests: Invalid value"},
		"its consumer": {at: location{consumer: "web", requirement: "cpu"}, path: "spec.consumers[0].target.container",
			want: "hpa-resource-consumers/web: spec.consumer.container-name: Invalid value"},
		"the intent": {at: location{consumer: "web"}, path: "spec.consumers",
			want: "hpa-intent: spec.consumers: Invalid value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fieldMessage(in, tc.at, tc.path, "Invalid value", labelField(in)); got != tc.want {
				t.Errorf("fieldMessage = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFromAPI: the API server's refusal of an intent is a 400 naming the REST fields; other
// errors of the API server pass through, for the caller to answer 500 or retry a conflict.
func TestFromAPI(t *testing.T) {
	in := utiltesting.MakeHPAIntent("i", "ns").Placement("p").Consumer(
		utiltesting.MakeConsumer("web").Target("Deployment", "web", "nginx").Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj()).Obj()
	gk := schema.GroupKind{Group: "fleetfit.io", Kind: "HPAIntent"}
	at := location{consumer: "web", requirement: "cpu"}
	refused := apierrors.NewInvalid(gk, "i", field.ErrorList{
		field.Invalid(field.NewPath("spec", "consumers").Index(0).Child("requirements").Index(0).Child("resource", "limits"), "3", "too much"),
		field.Invalid(field.NewPath("metadata", "name"), "I", "not a name"),
	})
	err := fromAPI(in, at, refused, labelField(in))
	var own *Error
	if !errors.As(err, &own) || own.Code != http.StatusBadRequest ||
		own.Message != `spec.limits: Invalid value: "3": too much; hpa-intent: metadata.name: Invalid value: "I": not a name` {
		t.Errorf("fromAPI(Invalid) = %v", err)
	}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "fleetfit.io", Resource: "hpaintents"}, "i", errors.New("changed"))
	if err := fromAPI(in, at, conflict, labelField(in)); !apierrors.IsConflict(err) {
		t.Errorf("fromAPI(Conflict) = %v, want the conflict itself", err)
	}
	if err := fromAPI(in, at, nil, labelField(in)); err != nil {
		t.Errorf("fromAPI(nil) = %v", err)
	}
}
