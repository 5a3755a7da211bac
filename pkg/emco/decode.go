package emco

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// maxBody bounds a request body: EMCO's bodies are a few hundred bytes.
const maxBody = 1 << 20

// decode reads a JSON body, or a YAML one with Content-Type
// application/yaml, into v. Unknown and repeated fields are refused, naming
// the field, as the API server refuses them for a strict request.
func decode(r *http.Request, v any) *Error {
	raw, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return errorf(http.StatusRequestEntityTooLarge, "the body is larger than %d bytes", maxBody)
		}
		return badRequest("reading the body: %v", err)
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return badRequest("the body is empty: send the %s as JSON, or as YAML with Content-Type: application/yaml", kindOf(v))
	}
	if isYAML(r.Header.Get("Content-Type")) {
		if raw, err = yaml.YAMLToJSON(raw); err != nil {
			return badRequest("the body is not YAML: %v", err)
		}
	}
	strict, err := sigsjson.UnmarshalStrict(raw, v)
	if err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return badRequest("%s: Invalid value: a JSON %s: must be %s", typeErr.Field, typeErr.Value, jsonType(typeErr.Type.String()))
		}
		return badRequest("the body is not a JSON object of an %s: %v", kindOf(v), err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return badRequest("%s", strings.Join(msgs, "; "))
	}
	return nil
}

func isYAML(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && (t == "application/yaml" || t == "application/x-yaml" || t == "text/yaml")
}

// jsonType says what a Go type is called in a message about JSON.
func jsonType(goType string) string {
	switch {
	case strings.Contains(goType, "int"):
		return "an integer"
	case strings.Contains(goType, "bool"):
		return "true or false"
	case strings.Contains(goType, "string"):
		if strings.HasPrefix(goType, "[]") {
			return "a list of strings"
		}
		return "a string"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	}
	return "an object"
}

func kindOf(v any) string {
	switch v.(type) {
	case *Intent:
		return "HPA intent"
	case *Consumer:
		return "HPA resource consumer"
	case *Requirement:
		return "resource requirement"
	}
	return fmt.Sprintf("%T", v)
}
