package simulate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// describe names what a value of a document is, in the words of YAML and JSON.
func describe(v any) string {
	switch x := v.(type) {
	case []any:
		return "a sequence"
	case map[string]any:
		return "a mapping"
	case string:
		return "a string"
	case bool:
		return fmt.Sprintf("a boolean (%t)", x)
	case int64, float64:
		return fmt.Sprintf("a number (%v)", x)
	case nil:
		return "null"
	default:
		return "a scalar"
	}
}

// eachDocument calls fn with every document of text, decoded with integers kept as integers
// (as the API server decodes them), in order. A document that starts with '{' and is JSON may
// be a stream of several JSON values, each a document of its own; one that is not JSON is
// YAML (a flow mapping). A key given twice in a mapping is an error, in YAML and in JSON alike:
// silently keeping one of the two values would schedule something the user did not write.
func eachDocument(text []byte, source string, fn func(place, any) error) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(text)))
	doc := 0
	for {
		raw, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: reading document %d: %w", source, doc+1, err)
		}
		trimmed := bytes.TrimSpace(raw)
		if len(trimmed) == 0 {
			continue
		}
		if trimmed[0] == '{' || trimmed[0] == '[' {
			if n, err := eachJSONValue(trimmed, source, doc, fn); n > 0 || err != nil {
				doc += n
				if err != nil {
					return err
				}
				continue
			}
		}
		doc++
		at := place{source: source, doc: doc}
		j, err := yaml.YAMLToJSONStrict(raw)
		if err != nil {
			return fmt.Errorf("%s: %s", at, yamlError(err))
		}
		var obj any
		if err := unmarshalStrict(j, &obj); err != nil {
			return fmt.Errorf("%s: %w", at, err)
		}
		if obj == nil {
			continue // comments only
		}
		if err := fn(at, obj); err != nil {
			return err
		}
	}
}

// eachJSONValue calls fn with every JSON value of b and returns how many it read. It reads
// none, and returns no error, when b does not start with a JSON value: b is then YAML.
func eachJSONValue(b []byte, source string, before int, fn func(place, any) error) (int, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	n := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			if n == 0 {
				return 0, nil
			}
			return n, fmt.Errorf("%s: not valid JSON after the %d object(s) before it: %w", place{source: source, doc: before + n + 1}, n, err)
		}
		n++
		at := place{source: source, doc: before + n}
		var obj any
		if err := unmarshalStrict(raw, &obj); err != nil {
			return n, fmt.Errorf("%s: %w", at, err)
		}
		if err := fn(at, obj); err != nil {
			return n, err
		}
	}
}

// unmarshalStrict decodes JSON as the API server does — integers as int64, keys case
// sensitive — and refuses a key given twice.
func unmarshalStrict(j []byte, v any) error {
	strict, err := sigsjson.UnmarshalStrict(j, v, sigsjson.DisallowDuplicateFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s: a key may appear only once in a mapping", strings.Join(msgs, "; "))
	}
	return nil
}

// yamlError makes the YAML parser's message one line; its line numbers count from the start of
// the document.
func yamlError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", " ")), " ")
	if strings.Contains(msg, "already set in map") {
		msg += " (lines count from the document's start; a key may appear only once in a mapping)"
	}
	return msg
}
