package mutation

import (
	"fmt"
	"strings"
)

// Manifests written by hand often hold null where a field is empty, such as
// `affinity:` with nothing under it. unstructured's Nested helpers reject a
// null on the way to a field; these treat it as absent.

// sliceAt returns the list at path in m, nil when it or a map on the way is
// absent or null. It does not copy the list. Errors name the field as at, the
// place of m in the object, followed by path.
func sliceAt(m map[string]any, at string, path ...string) ([]any, error) {
	v, err := valueAt(m, at, path...)
	if v == nil || err != nil {
		return nil, err
	}
	s, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not a list", fieldName(at, path...), describe(v))
	}
	return s, nil
}

// mapAt returns the map at path in m like sliceAt.
func mapAt(m map[string]any, at string, path ...string) (map[string]any, error) {
	v, err := valueAt(m, at, path...)
	if v == nil || err != nil {
		return nil, err
	}
	out, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not an object", fieldName(at, path...), describe(v))
	}
	return out, nil
}

func valueAt(m map[string]any, at string, path ...string) (any, error) {
	var v any = m
	for i, field := range path {
		if v == nil {
			return nil, nil
		}
		cur, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is %s, not an object", fieldName(at, path[:i]...), describe(v))
		}
		v = cur[field]
	}
	return v, nil
}

// fieldName joins a place in an object and a path below it.
func fieldName(at string, path ...string) string {
	parts := append([]string{at}, path...)
	if at == "" {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}

// describe names the JSON type of an unstructured value for messages.
func describe(v any) string {
	switch v.(type) {
	case string:
		return fmt.Sprintf("the string %q", v)
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case int64, float64:
		return fmt.Sprintf("the number %v", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// setAt sets the value at path in m, creating the maps on the way or
// replacing null ones. The caller has read the path with sliceAt or mapAt, so
// every map on the way is a map or null.
func setAt(m map[string]any, value any, path ...string) {
	for _, field := range path[:len(path)-1] {
		next, ok := m[field].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[field] = next
		}
		m = next
	}
	m[path[len(path)-1]] = value
}
