package install

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	deployaddon "github.com/fleetfit/fleetfit/deploy/addon"
)

func TestAddOnObjects(t *testing.T) {
	const image = "registry.example.com/fleetfit:v9"
	objs, err := AddOnObjects(AddOnOptions{Image: image})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, o := range objs {
		refs = append(refs, o.GetKind()+"/"+o.GetName())
	}
	want := []string{
		"ClusterRole/fleetfit:agent",
		"ValidatingAdmissionPolicy/fleetfit-agent-own-namespace",
		"ValidatingAdmissionPolicyBinding/fleetfit-agent-own-namespace",
		"AddOnTemplate/" + deployaddon.TemplateName,
		"ClusterManagementAddOn/" + deployaddon.Name,
	}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Fatalf("objects (-want,+got):\n%s", diff)
	}
	raw, err := objs[3].MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), `"image":"`+image+`"`); n != 1 {
		t.Errorf("the template names the image %d times, want once:\n%s", n, raw)
	}
	if strings.Contains(string(raw), `"image":"`+deployaddon.ImagePlaceholder+`"`) {
		t.Errorf("the template keeps the image placeholder")
	}
	// The embedded template itself is left as it is.
	if !strings.Contains(string(deployaddon.AddOnTemplate), "image: "+deployaddon.ImagePlaceholder) {
		t.Errorf("AddOnObjects changed deploy/addon's embedded template")
	}

	if _, err := AddOnObjects(AddOnOptions{Image: "bad image"}); err == nil {
		t.Errorf("an image with a space was accepted")
	}
}
