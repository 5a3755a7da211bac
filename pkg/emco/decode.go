package emco

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
		var yamlErr *Error
		if raw, yamlErr = yamlToJSON(raw); yamlErr != nil {
			return yamlErr
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

// yamlToJSON converts a YAML body to JSON, refusing what JSON refuses: a
// second document (a JSON body is one value) and a key given twice in one
// mapping (as UnmarshalStrict refuses a repeated field).
func yamlToJSON(raw []byte) ([]byte, *Error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	var doc []byte
	documents := 0
	for {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, badRequest("the body is not YAML: %v", err)
		}
		converted, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return nil, badRequest("the body is not YAML: %v", err)
		}
		if string(bytes.TrimSpace(converted)) == "null" {
			// Only comments or a separator: no document.
			continue
		}
		documents++
		doc = chunk
	}
	if documents == 0 {
		return nil, badRequest("the body holds no YAML document")
	}
	if documents > 1 {
		return nil, badRequest("the body holds %d YAML documents: send one per request", documents)
	}
	out, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		if m := yamlDuplicateRE.FindStringSubmatch(err.Error()); m != nil {
			return nil, badRequest("duplicate field %s (line %s of the body)", m[2], m[1])
		}
		return nil, badRequest("the body is not YAML: %v", err)
	}
	return out, nil
}

// yamlDuplicateRE finds a key given twice in the error of a strict YAML
// conversion, which says only its line.
var yamlDuplicateRE = regexp.MustCompile(`line (\d+): key (".*") already set in map`)

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
