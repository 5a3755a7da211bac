package allocationcandidates

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseQuery(t *testing.T) {
	q, err := ParseQuery("resources=VCPU:2,MEMORY_MB:2048,DISK_GB:10&required=HW_CPU_X86_AVX2,!fleetfit.io/spot" +
		"&resources_gpu-a=nvidia.com/gpu:1,cpu:500m&required_gpu-a=in:nvidia.com/gpu.product=A100,nvidia.com/gpu.product=H100" +
		"&group_policy=isolate&limit=3&member_of=in:east,west")
	if err != nil {
		t.Fatal(err)
	}
	want := &Query{
		Groups: []Group{
			{
				Resources: []Resource{
					{Name: corev1.ResourceCPU, Amount: resource.MustParse("2"), Milli: 2000},
					{Name: corev1.ResourceEphemeralStorage, Amount: resource.MustParse("10Gi"), Milli: 10 << 30 * 1000},
					{Name: corev1.ResourceMemory, Amount: resource.MustParse("2048Mi"), Milli: 2048 << 20 * 1000},
				},
				Required: []Trait{
					{Text: "HW_CPU_X86_AVX2", Key: CPUIDPrefix + "AVX2", Value: "true", HasValue: true},
					{Text: "!fleetfit.io/spot", Key: "fleetfit.io/spot", Forbidden: true},
				},
			},
			{
				Suffix: "_gpu-a",
				Resources: []Resource{
					{Name: corev1.ResourceCPU, Amount: resource.MustParse("500m"), Milli: 500},
					{Name: "nvidia.com/gpu", Amount: resource.MustParse("1"), Milli: 1000},
				},
				AnyOf: [][]Trait{{
					{Text: "nvidia.com/gpu.product=A100", Key: "nvidia.com/gpu.product", Value: "A100", HasValue: true},
					{Text: "nvidia.com/gpu.product=H100", Key: "nvidia.com/gpu.product", Value: "H100", HasValue: true},
				}},
			},
		},
		MemberOf:    []SetFilter{{Sets: []string{"east", "west"}}},
		GroupPolicy: PolicyIsolate,
		Limit:       3,
	}
	if diff := cmp.Diff(want, q, cmpopts.IgnoreUnexported(Trait{}), cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("query (-want,+got):\n%s", diff)
	}
}

func TestParseQueryErrors(t *testing.T) {
	cases := map[string]struct {
		query, param, message string
	}{
		"unknown parameter":                   {"resources=cpu:1&in_tree=x", "in_tree", "unknown parameter"},
		"numbered member_of":                  {"resources=cpu:1&member_of1=a", "member_of1", "unknown parameter"},
		"bad suffix":                          {"resources=cpu:1&resources.1=cpu:1", "resources.1", "unknown parameter"},
		"class without an amount":             {"resources1=cpu", "resources1", "cpu has no amount"},
		"class with an empty amount":          {"resources1=cpu:", "resources1", "cpu has no amount"},
		"empty class":                         {"resources=:1", "resources", "empty resource class"},
		"empty resources":                     {"resources=", "resources", "empty"},
		"zero amount":                         {"resources=cpu:0", "resources", "must be positive"},
		"negative amount":                     {"resources=memory:-1Gi", "resources", "must be positive"},
		"zero alias amount":                   {"resources=VCPU:0", "resources", "positive whole number"},
		"fractional alias amount":             {"resources=VCPU:500m", "resources", "positive whole number"},
		"invalid amount":                      {"resources=cpu:lots", "resources", "invalid amount"},
		"class repeated":                      {"resources=cpu:1,cpu:2", "resources", "given twice"},
		"alias and its name in one group":     {"resources2=VCPU:1,cpu:500m", "resources2", "cpu given twice (VCPU and cpu)"},
		"OpenStack class":                     {"resources=SRIOV_NET_VF:1", "resources", "unknown resource class SRIOV_NET_VF"},
		"invalid class":                       {"resources=a b:1", "resources", "invalid resource class"},
		"resources given twice":               {"resources=cpu:1&resources=memory:1Gi", "resources", "given 2 times"},
		"empty in: list":                      {"resources=cpu:1&required=in:", "required", "empty in: list"},
		"forbidden trait in in:":              {"resources=cpu:1&required=in:a,!b", "required", "forbidden trait"},
		"in: inside a list":                   {"resources=cpu:1&required=a,in:b", "required", "must start"},
		"empty required":                      {"resources=cpu:1&required=", "required", "empty"},
		"empty trait":                         {"resources=cpu:1&required=a,,b", "required", "empty trait"},
		"bare !":                              {"resources=cpu:1&required=!", "required", "empty trait"},
		"invalid trait key":                   {"resources=cpu:1&required=-bad-", "required", "invalid key"},
		"invalid trait value":                 {"resources=cpu:1&required=a=b c", "required", "invalid value"},
		"unknown group_policy":                {"resources1=cpu:1&group_policy=spread", "group_policy", "unknown policy"},
		"group_policy twice":                  {"resources1=cpu:1&group_policy=none&group_policy=none", "group_policy", "given 2 times"},
		"limit zero":                          {"resources=cpu:1&limit=0", "limit", "not a positive integer"},
		"limit negative":                      {"resources=cpu:1&limit=-2", "limit", "not a positive integer"},
		"limit not a number":                  {"resources=cpu:1&limit=ten", "limit", "not a positive integer"},
		"limit twice":                         {"resources=cpu:1&limit=1&limit=2", "limit", "given 2 times"},
		"numbered traits without resources":   {"resources=cpu:1&required7=fleetfit.io/x", "required7", "traits without resources"},
		"unnumbered traits without resources": {"resources1=cpu:1&required=fleetfit.io/x", "required", "traits without resources"},
		"no resources":                        {"limit=1", "resources", "no resources"},
		"two numbered groups without policy":  {"resources1=cpu:1&resources2=cpu:1", "group_policy", "more than one numbered group"},
		"empty member_of in:":                 {"resources=cpu:1&member_of=in:", "member_of", "empty in: list"},
		"invalid set name":                    {"resources=cpu:1&member_of=Not_A_Set", "member_of", "invalid ManagedClusterSet name"},
		"malformed query":                     {"resources=cpu:1&%zz", "query", "invalid"},
		// Suffixes are read in order: 1, 10, 11, ..., 17, 2, ..., 9.
		"too many numbered groups": {numberedGroups(17, "cpu:1", PolicyNone), "resources9", "beyond the 16 a query may have (it has 17)"},
		"hundreds of numbered groups": {"resources=cpu:1&" + numberedGroups(485, "cpu:1", PolicyNone), "resources113",
			"beyond the 16 a query may have (it has 485)"},
	}
	for title, tc := range cases {
		t.Run(title, func(t *testing.T) {
			_, err := ParseQuery(tc.query)
			var qe *Error
			if !errors.As(err, &qe) {
				t.Fatalf("ParseQuery(%q) = %v, want an *Error", tc.query, err)
			}
			if qe.Parameter != tc.param || !strings.Contains(qe.Message, tc.message) {
				t.Errorf("ParseQuery(%q) = %q on %q, want %q on %q", tc.query, qe.Message, qe.Parameter, tc.message, tc.param)
			}
		})
	}
}

// FuzzParseQuery checks that the parser never panics, that every error names a parameter, and
// that what it accepts keeps the Query's contract.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"resources=VCPU:2,MEMORY_MB:2048&required=HW_CPU_X86_AVX,CUSTOM_MAGIC",
		"resources1=example.com/vf:1,example.com/egress:10000&required1=fleetfit.io/net=net1&resources2=example.com/vf:1&required2=!fleetfit.io/ssl&group_policy=isolate",
		"resources=cpu:500m,nvidia.com/gpu:1&required=in:a,b=c&required=!d&member_of=!in:x,y&limit=5",
		"resources_a-b=DISK_GB:10&group_policy=none",
		"resources=cpu:1e3&limit=99999999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseQuery(raw)
		if err != nil {
			var qe *Error
			if !errors.As(err, &qe) || qe.Parameter == "" {
				t.Fatalf("ParseQuery(%q) = %v, want an *Error naming a parameter", raw, err)
			}
			return
		}
		if len(q.Groups) == 0 || q.Limit < 0 {
			t.Fatalf("ParseQuery(%q) accepted %+v", raw, q)
		}
		numbered := 0
		for i, g := range q.Groups {
			if g.Numbered() {
				numbered++
			} else if i != 0 {
				t.Fatalf("the unnumbered group is not first in %+v", q.Groups)
			}
			if len(g.Resources) == 0 {
				t.Fatalf("group %q has no resources", g.Suffix)
			}
			if !slices.IsSortedFunc(g.Resources, func(a, b Resource) int { return strings.Compare(string(a.Name), string(b.Name)) }) {
				t.Fatalf("group %q's resources are not sorted", g.Suffix)
			}
			for j, r := range g.Resources {
				if r.Milli <= 0 || r.Amount.Sign() <= 0 {
					t.Fatalf("group %q asks for %s of %s", g.Suffix, r.Amount.String(), r.Name)
				}
				if j > 0 && g.Resources[j-1].Name == r.Name {
					t.Fatalf("group %q repeats %s", g.Suffix, r.Name)
				}
			}
			for _, tr := range g.Required {
				if tr.sel == nil {
					t.Fatalf("trait %q was not compiled", tr.Text)
				}
			}
			for _, anyOf := range g.AnyOf {
				if len(anyOf) == 0 {
					t.Fatalf("group %q has an empty in: list", g.Suffix)
				}
			}
		}
		if numbered > 1 && q.GroupPolicy == "" {
			t.Fatalf("%d numbered groups without group_policy accepted", numbered)
		}
		if numbered > MaxNumberedGroups {
			t.Fatalf("%d numbered groups accepted, more than %d", numbered, MaxNumberedGroups)
		}
	})
}
