package allocationcandidates

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fleetfit/fleetfit/pkg/inventory"
)

// Group policies, as OpenStack Placement names them.
const (
	PolicyNone    = "none"
	PolicyIsolate = "isolate"
)

// CPUIDPrefix is the node-feature-discovery label an OpenStack HW_CPU_X86_<FLAG> trait stands
// for: HW_CPU_X86_AVX2 means feature.node.kubernetes.io/cpu-cpuid.AVX2=true.
const CPUIDPrefix = "feature.node.kubernetes.io/cpu-cpuid."

const hwCPUX86 = "HW_CPU_X86_"

// aliases are OpenStack's standard resource classes, in the Kubernetes resource they stand
// for and the unit of their whole-number amounts.
var aliases = map[string]struct {
	name corev1.ResourceName
	unit string
}{
	"VCPU":      {corev1.ResourceCPU, ""},
	"MEMORY_MB": {corev1.ResourceMemory, "Mi"},
	"DISK_GB":   {corev1.ResourceEphemeralStorage, "Gi"},
}

var (
	// suffixPattern is what may follow resources or required in a numbered group's
	// parameters (OpenStack Placement 1.33).
	suffixPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	// openstackClass is how OpenStack's own class names look (SRIOV_NET_VF, CUSTOM_FOO):
	// only the aliases of them mean something here.
	openstackClass = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// Query is a parsed GET /allocation_candidates query. Groups hold the unnumbered group first
// (when given), then the numbered ones in suffix order.
type Query struct {
	Groups []Group
	// MemberOf are the member_of parameters, ANDed; a cluster passes one when it is in some
	// of its sets, or, when Forbidden, in none of them.
	MemberOf []SetFilter
	// GroupPolicy is "", PolicyNone or PolicyIsolate.
	GroupPolicy string
	// Limit caps the number of allocation requests; 0 means no cap.
	Limit int
}

// Group is one request group: resources and required traits.
type Group struct {
	// Suffix is "" for the unnumbered group.
	Suffix string
	// Resources are sorted by name, one entry per name, amounts positive.
	Resources []Resource
	// Required are traits every node of a numbered group has (for the unnumbered group:
	// the nodes that supply it, taken together; see the package documentation).
	Required []Trait
	// AnyOf are the in: lists: each is met when one of its traits is.
	AnyOf [][]Trait
}

// Numbered reports whether the group is a numbered one.
func (g *Group) Numbered() bool { return g.Suffix != "" }

// Resource is an amount of one Kubernetes resource.
type Resource struct {
	Name   corev1.ResourceName
	Amount resource.Quantity
	Milli  int64
}

// Trait is a node label requirement: the label exists (Value empty) or has Value, or, when
// Forbidden, the opposite. Its selector is compiled once by the parser.
type Trait struct {
	Text      string
	Key       string
	Value     string
	HasValue  bool
	Forbidden bool
	sel       *inventory.Selector
}

// SetFilter is one member_of parameter.
type SetFilter struct {
	Sets      []string
	Forbidden bool
}

// Error is a bad query. Parameter names the query parameter at fault, as OpenStack's 400
// answers do.
type Error struct {
	Parameter string
	Message   string
}

func (e *Error) Error() string { return e.Parameter + ": " + e.Message }

func errorf(param, format string, args ...any) *Error {
	return &Error{Parameter: param, Message: fmt.Sprintf(format, args...)}
}

// ParseQuery parses a query string such as
// "resources=VCPU:2,MEMORY_MB:2048&resources1=nvidia.com/gpu:1&required1=HW_CPU_X86_AVX2".
// Every error is an *Error naming the parameter.
func ParseQuery(raw string) (*Query, error) {
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, &Error{Parameter: "query", Message: err.Error()}
	}
	return ParseValues(values)
}

// ParseValues parses the parameters of a query; see ParseQuery. Parameters are read in name
// order, so the error reported for a query with several faults is always the same one.
func ParseValues(values url.Values) (*Query, error) {
	q := &Query{}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range values {
			if !yield(k) {
				return
			}
		}
	})
	groups := map[string]*Group{}
	group := func(suffix string) *Group {
		g, ok := groups[suffix]
		if !ok {
			g = &Group{Suffix: suffix}
			groups[suffix] = g
		}
		return g
	}
	hasResources := map[string]bool{}
	for _, key := range keys {
		vals := values[key]
		switch {
		case key == "group_policy":
			if len(vals) > 1 {
				return nil, errorf(key, "given %d times; give it once", len(vals))
			}
			switch vals[0] {
			case PolicyNone, PolicyIsolate:
				q.GroupPolicy = vals[0]
			default:
				return nil, errorf(key, "unknown policy %q: use none or isolate", vals[0])
			}
		case key == "limit":
			if len(vals) > 1 {
				return nil, errorf(key, "given %d times; give it once", len(vals))
			}
			n, err := strconv.Atoi(vals[0])
			if err != nil || n < 1 {
				return nil, errorf(key, "%q is not a positive integer", vals[0])
			}
			q.Limit = n
		case key == "member_of":
			for _, v := range vals {
				f, err := parseMemberOf(v)
				if err != nil {
					return nil, errorf(key, "%s", err)
				}
				q.MemberOf = append(q.MemberOf, f)
			}
		case strings.HasPrefix(key, "resources"):
			suffix, ok := groupSuffix(key, "resources")
			if !ok {
				return nil, unknownParameter(key)
			}
			if len(vals) > 1 {
				return nil, errorf(key, "given %d times; list every class of the group in one parameter", len(vals))
			}
			res, err := parseResources(key, vals[0])
			if err != nil {
				return nil, err
			}
			group(suffix).Resources = res
			hasResources[suffix] = true
		case strings.HasPrefix(key, "required"):
			suffix, ok := groupSuffix(key, "required")
			if !ok {
				return nil, unknownParameter(key)
			}
			g := group(suffix)
			// Repeated required parameters are ANDed, as in Placement 1.39.
			for _, v := range vals {
				if err := parseRequired(key, v, g); err != nil {
					return nil, err
				}
			}
		default:
			return nil, unknownParameter(key)
		}
	}
	suffixes := slices.Sorted(func(yield func(string) bool) {
		for s := range groups {
			if !yield(s) {
				return
			}
		}
	})
	numbered := 0
	for _, s := range suffixes {
		if !hasResources[s] {
			return nil, errorf("required"+s, "traits without resources: give resources%s too", s)
		}
		if s != "" {
			if numbered++; numbered > MaxNumberedGroups {
				given := len(groups)
				if _, ok := groups[""]; ok {
					given--
				}
				return nil, errorf("resources"+s, "a numbered group beyond the %d a query may have (it has %d): "+
					"ask for at most %d", MaxNumberedGroups, given, MaxNumberedGroups)
			}
		}
		q.Groups = append(q.Groups, *groups[s])
	}
	if len(q.Groups) == 0 {
		return nil, errorf("resources", "no resources asked for: give resources or resourcesN")
	}
	if numbered > 1 && q.GroupPolicy == "" {
		return nil, errorf("group_policy", "required with more than one numbered group: use none or isolate")
	}
	return q, nil
}

func unknownParameter(key string) *Error {
	if key == "" {
		return errorf("query", "a parameter without a name")
	}
	return errorf(key, "unknown parameter: use resources, required, resourcesN, requiredN, member_of, group_policy or limit")
}

// groupSuffix returns what follows prefix in key, "" for the unnumbered group, and false when
// it is not a valid suffix.
func groupSuffix(key, prefix string) (string, bool) {
	s := strings.TrimPrefix(key, prefix)
	return s, s == "" || suffixPattern.MatchString(s)
}

func parseResources(param, value string) ([]Resource, error) {
	if value == "" {
		return nil, errorf(param, "empty: give CLASS:AMOUNT,...")
	}
	var out []Resource
	given := map[corev1.ResourceName]string{}
	for item := range strings.SplitSeq(value, ",") {
		class, amount, ok := strings.Cut(item, ":")
		if class == "" {
			return nil, errorf(param, "empty resource class in %q", value)
		}
		if !ok || amount == "" {
			return nil, errorf(param, "%s has no amount: write %s:AMOUNT", class, class)
		}
		r, err := parseResource(class, amount)
		if err != nil {
			return nil, errorf(param, "%s", err)
		}
		if prev, dup := given[r.Name]; dup {
			return nil, errorf(param, "resource class %s given twice (%s and %s)", r.Name, prev, class)
		}
		given[r.Name] = class
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out, nil
}

func parseResource(class, amount string) (Resource, error) {
	if a, ok := aliases[class]; ok {
		n, err := strconv.ParseInt(amount, 10, 64)
		if err != nil || n < 1 {
			return Resource{}, fmt.Errorf("%s takes a positive whole number, got %q", class, amount)
		}
		q, err := resource.ParseQuantity(strconv.FormatInt(n, 10) + a.unit)
		if err != nil {
			return Resource{}, fmt.Errorf("%s: %w", class, err)
		}
		return Resource{Name: a.name, Amount: q, Milli: inventory.MilliOf(q)}, nil
	}
	if openstackClass.MatchString(class) {
		return Resource{}, fmt.Errorf("unknown resource class %s: use a Kubernetes resource name (cpu, memory, nvidia.com/gpu) or VCPU, MEMORY_MB, DISK_GB", class)
	}
	if msgs := validation.IsQualifiedName(class); len(msgs) > 0 {
		return Resource{}, fmt.Errorf("invalid resource class %q: %s", class, strings.Join(msgs, "; "))
	}
	q, err := resource.ParseQuantity(amount)
	if err != nil {
		return Resource{}, fmt.Errorf("%s: invalid amount %q: %w", class, amount, err)
	}
	if q.Sign() <= 0 {
		return Resource{}, fmt.Errorf("%s: the amount must be positive, got %s", class, amount)
	}
	return Resource{Name: corev1.ResourceName(class), Amount: q, Milli: inventory.MilliOf(q)}, nil
}

// parseRequired adds one required parameter's traits to g: a comma-separated list of traits,
// each of which must hold, or in:a,b,... of which one must.
func parseRequired(param, value string, g *Group) error {
	if rest, ok := strings.CutPrefix(value, "in:"); ok {
		if rest == "" {
			return errorf(param, "empty in: list")
		}
		var anyOf []Trait
		for item := range strings.SplitSeq(rest, ",") {
			if strings.HasPrefix(item, "!") {
				return errorf(param, "forbidden trait %s in an in: list: give it as its own item", item)
			}
			t, err := parseTrait(item)
			if err != nil {
				return errorf(param, "%s", err)
			}
			anyOf = append(anyOf, t)
		}
		g.AnyOf = append(g.AnyOf, anyOf)
		return nil
	}
	if value == "" {
		return errorf(param, "empty: give TRAIT,... or in:TRAIT,...")
	}
	for item := range strings.SplitSeq(value, ",") {
		if strings.HasPrefix(item, "in:") {
			return errorf(param, "in: must start the parameter's value; give it as its own %s parameter", param)
		}
		t, err := parseTrait(item)
		if err != nil {
			return errorf(param, "%s", err)
		}
		g.Required = append(g.Required, t)
	}
	return nil
}

// parseTrait reads key, key=value, !key or !key=value, with HW_CPU_X86_<FLAG> read as
// feature.node.kubernetes.io/cpu-cpuid.<FLAG>=true, and compiles its selector.
func parseTrait(text string) (Trait, error) {
	t := Trait{Text: text}
	body := text
	if b, ok := strings.CutPrefix(body, "!"); ok {
		t.Forbidden, body = true, b
	}
	if body == "" {
		return t, fmt.Errorf("empty trait in %q", text)
	}
	t.Key, t.Value, t.HasValue = strings.Cut(body, "=")
	if flag, ok := strings.CutPrefix(t.Key, hwCPUX86); ok && !t.HasValue && flag != "" {
		t.Key, t.Value, t.HasValue = CPUIDPrefix+flag, "true", true
	}
	req := corev1.NodeSelectorRequirement{Key: t.Key}
	switch {
	case t.HasValue && t.Forbidden:
		req.Operator, req.Values = corev1.NodeSelectorOpNotIn, []string{t.Value}
	case t.HasValue:
		req.Operator, req.Values = corev1.NodeSelectorOpIn, []string{t.Value}
	case t.Forbidden:
		req.Operator = corev1.NodeSelectorOpDoesNotExist
	default:
		req.Operator = corev1.NodeSelectorOpExists
	}
	sel, err := inventory.NewSelector([]corev1.NodeSelectorRequirement{req}, nil)
	if err != nil {
		return t, fmt.Errorf("trait %q: %w", text, err)
	}
	t.sel = sel
	return t, nil
}

func parseMemberOf(value string) (SetFilter, error) {
	f := SetFilter{}
	body := value
	if b, ok := strings.CutPrefix(body, "!"); ok {
		f.Forbidden, body = true, b
	}
	if rest, ok := strings.CutPrefix(body, "in:"); ok {
		if rest == "" {
			return f, fmt.Errorf("empty in: list")
		}
		body = rest
	}
	for name := range strings.SplitSeq(body, ",") {
		if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
			return f, fmt.Errorf("invalid ManagedClusterSet name %q: %s", name, strings.Join(msgs, "; "))
		}
		f.Sets = append(f.Sets, name)
	}
	return f, nil
}
