package emco

import (
	"net/url"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Every name of the API has one rule, checked before anything is read or
// written, both where a body gives the name (a 400 naming the field) and
// where a path uses it (a 404 naming the rule). A name the rule lets through
// can be held by the hub API server and read back at its path: "." and "..",
// "a/b" or "a%b" never reach it, so they can neither cause an internal error
// nor make an object that no GET or DELETE reaches.
//
//   - project: a namespace name, a DNS-1123 label;
//   - intent: an HPAIntent name, a DNS-1123 subdomain; so is spec.app, the
//     name of a Placement, and the consumer's object;
//   - composite app, version, deployment intent group, consumer and
//     requirement: EMCO's names (emcoName), which are also label values.

// maxEMCONameLength is the HPAIntent's bound on consumer and requirement
// names, and the bound of a label value.
const maxEMCONameLength = 63

const emcoNameFmt = `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`

var emcoNameRE = regexp.MustCompile("^" + emcoNameFmt + "$")

// isEMCOName returns what is wrong with an EMCO name, as apimachinery's
// validation functions do: alphanumerics, '-', '_' and '.', beginning and
// ending with an alphanumeric, at most 63 characters.
func isEMCOName(name string) []string {
	var problems []string
	if len(name) > maxEMCONameLength {
		problems = append(problems, validation.MaxLenError(maxEMCONameLength))
	}
	if !emcoNameRE.MatchString(name) {
		problems = append(problems, validation.RegexError(
			"a name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
			emcoNameFmt, "core-fwall", "core-fwall-RAM-needs", "v1.0"))
	}
	return problems
}

// bodyName checks a name a body gives at path, with rule; "" is left to the
// validation that requires it, whose message says so.
func bodyName(path, name string, rule func(string) []string) *Error {
	if name == "" {
		return nil
	}
	if problems := rule(name); len(problems) > 0 {
		return badRequest("%s", field.Invalid(fieldPath(path), name, strings.Join(problems, "; ")).Error())
	}
	return nil
}

func fieldPath(path string) *field.Path {
	parts := strings.Split(path, ".")
	return field.NewPath(parts[0], parts[1:]...)
}

// checkNames refuses a path whose names break their rule: the labels of the
// deployment intent group are a 400, as before any name was read; the
// project, intent, consumer and requirement cannot exist, a 404.
func (s scope) checkNames() *Error {
	for _, seg := range []struct{ what, value string }{
		{"composite app", s.app}, {"composite app version", s.version}, {"deployment intent group", s.dig},
	} {
		if problems := isEMCOName(seg.value); len(problems) > 0 {
			return badRequest("%s %q: %s", seg.what, seg.value, problems[0])
		}
	}
	if problems := validation.IsDNS1123Label(s.project); len(problems) > 0 {
		return notFound("project %q not found: a project is a namespace: %s", s.project, problems[0])
	}
	if s.intent != "" {
		if problems := validation.IsDNS1123Subdomain(s.intent); len(problems) > 0 {
			return notFound("hpa intent %q not found: %s", s.intent, problems[0])
		}
	}
	if s.consumer != "" {
		if problems := isEMCOName(s.consumer); len(problems) > 0 {
			return notFound("hpa resource consumer %q not found in hpa intent %q: %s", s.consumer, s.intent, problems[0])
		}
	}
	if s.requirement != "" {
		if problems := isEMCOName(s.requirement); len(problems) > 0 {
			return notFound("resource requirement %q not found in hpa resource consumer %q: %s", s.requirement, s.consumer, problems[0])
		}
	}
	return nil
}

// checkQuery refuses query parameters: EMCO's HPA intent API takes none, and
// one that is ignored (a labelSelector, a limit) would answer another
// question than the one asked.
func checkQuery(u *url.URL) *Error {
	if u.RawQuery == "" {
		return nil
	}
	values, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return badRequest("the query %q is malformed: %v; this API takes no query parameters", u.RawQuery, err)
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		return nil
	}
	return badRequest("unknown query parameter %q: this API takes no query parameters", keys[0])
}
