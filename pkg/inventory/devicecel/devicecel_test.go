package devicecel

import (
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func a100() Device {
	return Device{
		Driver: "gpu.example.com",
		Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"model":  {StringValue: ptr.To("A100")},
			"cores":  {IntValue: ptr.To(int64(6912))},
			"driver": {VersionValue: ptr.To("550.54.15")},
			"mig":    {BoolValue: ptr.To(false)},
		},
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{
			"memory": {Value: resource.MustParse("80Gi")},
		},
	}
}

func TestSelectors(t *testing.T) {
	for expr, want := range map[string]bool{
		`device.driver == "gpu.example.com"`:                                                true,
		`device.attributes["gpu.example.com"].model == "A100"`:                              true,
		`device.attributes["gpu.example.com"].model == "H100"`:                              false,
		`device.attributes["gpu.example.com"].cores > 5000`:                                 true,
		`device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`:        true,
		`device.attributes["gpu.example.com"].driver.isGreaterThan(semver("535.0.0"))`:      true,
		`!device.attributes["gpu.example.com"].mig`:                                         true,
		`"model" in device.attributes["other.example.com"]`:                                 false,
		`device.attributes["gpu.example.com"].model.startsWith("A") && device.driver != ""`: true,
	} {
		p, err := Compile(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		got, err := p.Matches(a100())
		if err != nil || got != want {
			t.Errorf("%s = %v, %v; want %v", expr, got, err, want)
		}
	}
}

func TestRefused(t *testing.T) {
	for expr, want := range map[string]string{
		`1`:                              "must evaluate to bool",
		`device.attributes[`:             "compilation failed",
		`nosuch == 1`:                    "undeclared reference",
		strings.Repeat("a", MaxLength+1): "longer than",
		`device.attributes["x"].y.size() > 0 && [1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, device.attributes["x"].z.matches(device.attributes["x"].w)))))`: "",
	} {
		err := Check(expr)
		if want == "" {
			// Accepted or refused as too complex, but never a panic.
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40s: error %v, want one saying %q", expr, err, want)
		}
	}
}

func TestMissingAttributeDoesNotMatch(t *testing.T) {
	p, err := Compile(`device.attributes["gpu.example.com"].uuid == "x"`)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := p.Matches(a100()); ok || err == nil || !strings.Contains(err.Error(), "no such key") {
		t.Errorf("Matches = %v, %v; want false with the missing key", ok, err)
	}
}

// FuzzSelector compiles any expression and evaluates what compiles on a
// device: neither may panic, an accepted expression evaluates within the
// time limit, and Compile answers the same the second time (the cache).
func FuzzSelector(f *testing.F) {
	for _, s := range []string{
		`device.driver == "gpu.example.com"`,
		`device.attributes["gpu.example.com"].model == "A100"`,
		`device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0`,
		`device.attributes["gpu.example.com"].driver.isGreaterThan(semver("535.0.0"))`,
		`device.attributes["gpu.example.com"].model.matches("^A[0-9]+$")`,
		`[1,2,3].all(x, x > 0)`,
		`device.attributes["gpu.example.com"]["model"] == "A100"`,
		`quantity("1e1000") == quantity("1")`,
	} {
		f.Add(s, "A100")
	}
	f.Fuzz(func(t *testing.T, expr, model string) {
		p, err := Compile(expr)
		p2, err2 := Compile(expr)
		if (err == nil) != (err2 == nil) || p != p2 {
			t.Fatalf("Compile(%q) answered %v then %v", expr, err, err2)
		}
		if err != nil {
			return
		}
		d := a100()
		d.Attributes["model"] = resourcev1.DeviceAttribute{StringValue: ptr.To(model)}
		_, _ = p.Matches(d)
	})
}
