package emco

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// Error is a failed request: the status code and the message the client gets.
type Error struct {
	Code    int
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, format, args...)
}

func notFound(format string, args ...any) *Error {
	return errorf(http.StatusNotFound, format, args...)
}

func conflict(format string, args ...any) *Error {
	return errorf(http.StatusConflict, format, args...)
}

// isNotFound reports whether err is a 404 of ours.
func isNotFound(err error) bool {
	var own *Error
	return errors.As(err, &own) && own.Code == http.StatusNotFound
}

// location is where in the REST API a part of an HPAIntent lives: the intent
// (both empty), one of its consumers, or one of that consumer's requirements.
type location struct {
	consumer, requirement string
}

func (l location) String() string {
	switch {
	case l.consumer == "":
		return ""
	case l.requirement == "":
		return "hpa-resource-consumers/" + l.consumer
	default:
		return "hpa-resource-consumers/" + l.consumer + "/resource-requirements/" + l.requirement
	}
}

var (
	consumerIndexRE    = regexp.MustCompile(`^spec\.consumers\[(\d+)\]`)
	requirementIndexRE = regexp.MustCompile(`^\.requirements\[(\d+)\]`)
)

// restField maps a field path of the HPAIntent (as validation and the API
// server name it) to the location it belongs to and the field of that
// location's REST body, e.g. spec.consumers[0].requirements[1].resource.requests
// to (core-fwall/cpu, spec.requests). Paths it does not know are kept.
func restField(in *v1alpha1.HPAIntent, path string, featureField func(location) string) (location, string) {
	switch {
	case path == "spec.placementRef.name" || path == "spec.placementRef":
		return location{}, "spec.app"
	case strings.HasPrefix(path, "metadata."):
		return location{}, path
	}
	m := consumerIndexRE.FindStringSubmatch(path)
	if m == nil {
		return location{}, path
	}
	i, _ := strconv.Atoi(m[1])
	if i >= len(in.Spec.Consumers) {
		return location{}, path
	}
	c := &in.Spec.Consumers[i]
	rest := strings.TrimPrefix(path, m[0])
	loc := location{consumer: c.Name}
	if m := requirementIndexRE.FindStringSubmatch(rest); m != nil {
		j, _ := strconv.Atoi(m[1])
		if j < len(c.Requirements) {
			loc.requirement = c.Requirements[j].Name
			return loc, requirementField(strings.TrimPrefix(rest, m[0]), featureField(loc))
		}
	}
	return loc, consumerField(rest)
}

func consumerField(rest string) string {
	switch rest {
	case "", ".target":
		return "spec.consumer"
	case ".name":
		return "metadata.name"
	case ".target.apiVersion", ".target.kind", ".target.name":
		return "spec.consumer." + strings.TrimPrefix(rest, ".target.")
	case ".target.container":
		return "spec.consumer.container-name"
	case ".requirements":
		return "resource-requirements"
	}
	return "spec" + rest
}

// requirementField maps a path within a requirement; keyField is the name the
// request gave a node label: key, or name as in EMCO's design.
func requirementField(rest, keyField string) string {
	switch rest {
	case "", ".resource", ".feature":
		return "spec"
	case ".name":
		return "metadata.name"
	case ".feature.key":
		return "spec." + keyField
	}
	for _, prefix := range []string{".resource.", ".feature."} {
		if strings.HasPrefix(rest, prefix) {
			return "spec." + strings.TrimPrefix(rest, prefix)
		}
	}
	return "spec" + rest
}

// fieldMessage formats one problem of in at path for a request about at:
// "<field>: <what is wrong>", prefixed with the location when the problem is
// in another part of the intent than the one the request is about.
func fieldMessage(in *v1alpha1.HPAIntent, at location, path, body string, featureField func(location) string) string {
	loc, f := restField(in, path, featureField)
	if loc != at && loc.String() != "" {
		return loc.String() + ": " + f + ": " + body
	}
	if loc != at && loc.String() == "" && at.consumer != "" {
		return "hpa-intent: " + f + ": " + body
	}
	return f + ": " + body
}

// invalid turns validation's findings about in into a 400 that names the
// fields of the REST body.
func invalid(in *v1alpha1.HPAIntent, at location, errs field.ErrorList, featureField func(location) string) *Error {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, fieldMessage(in, at, e.Field, e.ErrorBody(), featureField))
	}
	return badRequest("%s", strings.Join(msgs, "; "))
}

// fromAPI turns an error of the hub API server into the error the client
// gets: the API server's refusal of the object is a 400 with its message,
// the fields named as in the REST body; anything else that is not ours is an
// internal error.
func fromAPI(in *v1alpha1.HPAIntent, at location, err error, featureField func(location) string) error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) {
		return err
	}
	details := status.Status().Details
	if details == nil || len(details.Causes) == 0 {
		return badRequest("%s", status.Status().Message)
	}
	var msgs []string
	for _, c := range details.Causes {
		if c.Field == "" {
			msgs = append(msgs, c.Message)
			continue
		}
		msgs = append(msgs, fieldMessage(in, at, c.Field, c.Message, featureField))
	}
	return badRequest("%s", strings.Join(msgs, "; "))
}
