package validation

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The helpers below stand for the CRD's OpenAPI keywords (minLength,
// maxLength, minItems, maxItems, minimum, maximum, enum). Each returns the
// error type and detail the API server gives for the same value, so that a
// file checked offline gets the server's wording; the server prefixes the
// detail with "<path> in body", which field.Error already shows.

// validateRequiredString checks a string field the schema requires, with
// minLength 1: Go cannot tell a missing field from an empty one, and a client
// sends both as "", which the server rejects for being too short.
func validateRequiredString(path *field.Path, s string, maxLength int) field.ErrorList {
	if s == "" {
		return field.ErrorList{field.Invalid(path, s, "should be at least 1 chars long")}
	}
	return validateMaxLength(path, s, maxLength)
}

// validateMaxLength counts characters, not bytes, as the schema validator does.
func validateMaxLength(path *field.Path, s string, maxLength int) field.ErrorList {
	if utf8.RuneCountInString(s) > maxLength {
		return field.ErrorList{field.TooLong(path, s, maxLength)}
	}
	return nil
}

// validateMaxItems checks an optional list with maxItems. Consumers and
// requirements may be empty (an intent built step by step through EMCO's API
// is incomplete until it has both, which the hub reports in its Valid
// condition rather than refusing it).
func validateMaxItems(path *field.Path, n, maxItems int) field.ErrorList {
	if n > maxItems {
		return field.ErrorList{field.TooMany(path, n, maxItems)}
	}
	return nil
}

func validateMinimum(path *field.Path, v, minimum int64) field.ErrorList {
	if v < minimum {
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("should be greater than or equal to %d", minimum))}
	}
	return nil
}

func validateMaximum(path *field.Path, v, maximum int64) field.ErrorList {
	if v > maximum {
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("should be less than or equal to %d", maximum))}
	}
	return nil
}

// validateEnum lists the supported values in the order given, which is the
// schema's, as the server does.
func validateEnum[T ~string](path *field.Path, v T, supported []T) field.ErrorList {
	if slices.Contains(supported, v) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path, v, supported)}
}

// isCELInteger is what the CEL expression quantity(string(q)).isInteger()
// says of q once a Go client has sent it: q is encoded in its canonical form,
// which is parsed again and must then fit an int64 exactly. Parsing the
// canonical form matters: 2000m is kept with a negative scale and is no int64
// as such, but it is sent as 2.
func isCELInteger(q *resource.Quantity) bool {
	sent, err := resource.ParseQuantity(q.String())
	if err != nil {
		return false
	}
	_, ok := sent.AsInt64()
	return ok
}
