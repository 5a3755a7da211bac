package mutation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
)

func fromTemplate(name, template string) corev1.PodResourceClaim {
	return corev1.PodResourceClaim{Name: name, ResourceClaimTemplateName: ptr.To(template)}
}

func withClaims(c corev1.Container, claims ...corev1.ResourceClaim) corev1.Container {
	c.Resources.Claims = claims
	return c
}

func TestMutateClaims(t *testing.T) {
	gpu := PodClaim{Name: "train", TemplateName: "ml.trainer.train"}
	nic := PodClaim{Name: "net", TemplateName: "ml.trainer.net"}
	scratch := fromTemplate("scratch", "scratch-disk")
	cases := map[string]struct {
		in, want *corev1.PodSpec
		m        Mutation
	}{
		"added to the pod and its container": {
			in: &corev1.PodSpec{Containers: []corev1.Container{ctr("log-shipper", nil, nil), ctr("train", rl("cpu", "1"), nil)}},
			m:  Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: &corev1.PodSpec{
				Containers:     []corev1.Container{ctr("log-shipper", nil, nil), withClaims(ctr("train", rl("cpu", "1"), nil), corev1.ResourceClaim{Name: "train"})},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train")},
			},
		},
		"with amounts": {
			in: &corev1.PodSpec{Containers: []corev1.Container{ctr("train", nil, nil)}},
			m:  Mutation{Container: "train", Requests: rl("cpu", "2"), Claims: []PodClaim{gpu}},
			want: &corev1.PodSpec{
				Containers:     []corev1.Container{withClaims(ctr("train", rl("cpu", "2"), nil), corev1.ResourceClaim{Name: "train"})},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train")},
			},
		},
		"no container named: the first": {
			in: &corev1.PodSpec{Containers: []corev1.Container{ctr("train", nil, nil), ctr("log-shipper", nil, nil)}},
			m:  Mutation{Claims: []PodClaim{gpu, nic}},
			want: &corev1.PodSpec{
				Containers: []corev1.Container{
					withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "train"}, corev1.ResourceClaim{Name: "net"}),
					ctr("log-shipper", nil, nil),
				},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train"), fromTemplate("net", "ml.trainer.net")},
			},
		},
		"the pod's other claims stay": {
			in: &corev1.PodSpec{
				Containers:     []corev1.Container{withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "scratch"})},
				ResourceClaims: []corev1.PodResourceClaim{scratch, {Name: "shared", ResourceClaimName: ptr.To("shared-fpga")}},
			},
			m: Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: &corev1.PodSpec{
				Containers: []corev1.Container{withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "scratch"}, corev1.ResourceClaim{Name: "train"})},
				ResourceClaims: []corev1.PodResourceClaim{
					scratch, {Name: "shared", ResourceClaimName: ptr.To("shared-fpga")}, fromTemplate("train", "ml.trainer.train"),
				},
			},
		},
		"already there": {
			in: &corev1.PodSpec{
				Containers:     []corev1.Container{withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "train"})},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train")},
			},
			m: Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: &corev1.PodSpec{
				Containers:     []corev1.Container{withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "train"})},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train")},
			},
		},
		"the container uses one request of the claim": {
			in: &corev1.PodSpec{
				Containers:     []corev1.Container{withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "train", Request: "gpu"})},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train")},
			},
			m: Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: &corev1.PodSpec{
				Containers:     []corev1.Container{withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "train", Request: "gpu"})},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train")},
			},
		},
		"the pod has the claim, the container not yet": {
			in: &corev1.PodSpec{
				Containers:     []corev1.Container{ctr("train", nil, nil)},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train")},
			},
			m: Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: &corev1.PodSpec{
				Containers:     []corev1.Container{withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "train"})},
				ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "ml.trainer.train")},
			},
		},
	}
	kinds := map[string]string{"Deployment": "apps/v1", "CronJob": "batch/v1", "Pod": "v1"}
	for kind, apiVersion := range kinds {
		for name, tc := range cases {
			t.Run(kind+"/"+name, func(t *testing.T) {
				obj := object(apiVersion, kind, tc.in)
				if err := mutateTwice(t, obj, tc.m); err != nil {
					t.Fatalf("Mutate failed: %v", err)
				}
				if diff := cmp.Diff(object(apiVersion, kind, tc.want).Object, obj.Object); diff != "" {
					t.Errorf("Unexpected object (-want,+got):\n%s", diff)
				}
			})
		}
	}
}

// TestMutateClaimsNull takes null claims lists, as hand-written manifests
// have them, for absent ones.
func TestMutateClaimsNull(t *testing.T) {
	obj := object("apps/v1", "Deployment", &corev1.PodSpec{Containers: []corev1.Container{ctr("train", nil, nil)}})
	if err := unstructured.SetNestedField(obj.Object, nil, "spec", "template", "spec", "resourceClaims"); err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	cs[0].(map[string]any)["resources"] = nil
	if err := unstructured.SetNestedSlice(obj.Object, cs, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	if err := mutateTwice(t, obj, Mutation{Container: "train", Claims: []PodClaim{{Name: "train", TemplateName: "t"}}}); err != nil {
		t.Fatalf("Mutate failed: %v", err)
	}
	want := object("apps/v1", "Deployment", &corev1.PodSpec{
		Containers:     []corev1.Container{withClaims(ctr("train", nil, nil), corev1.ResourceClaim{Name: "train"})},
		ResourceClaims: []corev1.PodResourceClaim{fromTemplate("train", "t")},
	})
	if diff := cmp.Diff(want.Object, obj.Object); diff != "" {
		t.Errorf("Unexpected object (-want,+got):\n%s", diff)
	}
}

func TestMutateClaimErrors(t *testing.T) {
	gpu := PodClaim{Name: "train", TemplateName: "ml.trainer.train"}
	spec := func(claims ...corev1.PodResourceClaim) *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{ctr("train", nil, nil)}, ResourceClaims: claims}
	}
	claimsNotAList := object("apps/v1", "Deployment", spec())
	if err := unstructured.SetNestedField(claimsNotAList.Object, "gpu", "spec", "template", "spec", "resourceClaims"); err != nil {
		t.Fatal(err)
	}
	containerClaimsNotAList := object("v1", "Pod", spec())
	cs, _, _ := unstructured.NestedSlice(containerClaimsNotAList.Object, "spec", "containers")
	cs[0].(map[string]any)["resources"] = map[string]any{"claims": map[string]any{"name": "train"}}
	if err := unstructured.SetNestedSlice(containerClaimsNotAList.Object, cs, "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		m    Mutation
		want string
	}{
		"a claim of the same name from another template": {
			obj: object("apps/v1", "Deployment", spec(fromTemplate("scratch", "disk"), fromTemplate("train", "my-gpus"))),
			m:   Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: `Deployment w: spec.template.spec.resourceClaims[1] "train" claims the ResourceClaimTemplate "my-gpus" where fleetfit delivers the pods with the claim "train" ` +
				`of the ResourceClaimTemplate "ml.trainer.train" for the intent's device requirements; rename the claim in the manifest`,
		},
		"a claim of the same name from a ResourceClaim": {
			obj: object("batch/v1", "Job", spec(corev1.PodResourceClaim{Name: "train", ResourceClaimName: ptr.To("shared")})),
			m:   Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: `Job w: spec.template.spec.resourceClaims[0] "train" claims the ResourceClaim "shared" where fleetfit delivers the pods with the claim "train" ` +
				`of the ResourceClaimTemplate "ml.trainer.train" for the intent's device requirements; rename the claim in the manifest`,
		},
		"two claims of one name": {
			obj: object("apps/v1", "StatefulSet", spec()),
			m:   Mutation{Container: "train", Claims: []PodClaim{gpu, {Name: "train", TemplateName: "other"}}},
			want: `StatefulSet w: spec.template.spec.resourceClaims[0] "train" claims the ResourceClaimTemplate "ml.trainer.train" where fleetfit delivers the pods with the claim "train" ` +
				`of the ResourceClaimTemplate "other" for the intent's device requirements; rename the claim in the manifest`,
		},
		"resourceClaims of the wrong type": {
			obj:  claimsNotAList,
			m:    Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: `Deployment w: spec.template.spec.resourceClaims is the string "gpu", not a list`,
		},
		"a container's claims of the wrong type": {
			obj:  containerClaimsNotAList,
			m:    Mutation{Container: "train", Claims: []PodClaim{gpu}},
			want: `Pod w: spec.containers[0].resources.claims is an object, not a list`,
		},
		"a missing container": {
			obj:  object("apps/v1", "Deployment", spec()),
			m:    Mutation{Container: "trian", Claims: []PodClaim{gpu}},
			want: `Deployment w: no container "trian" (containers: "train")`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.obj.DeepCopy()
			err := Mutate(tc.obj, tc.m)
			if err == nil {
				t.Fatal("Mutate succeeded, want an error")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("Unexpected error (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(before.Object, tc.obj.Object); diff != "" {
				t.Errorf("A failed Mutate changed the object (-before,+after):\n%s", diff)
			}
		})
	}
}
