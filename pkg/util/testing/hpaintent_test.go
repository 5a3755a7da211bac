package testing

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

func TestTargetAPIVersion(t *testing.T) {
	cases := map[string]struct {
		kind string
		want string
	}{
		"Deployment":  {kind: "Deployment", want: "apps/v1"},
		"StatefulSet": {kind: "StatefulSet", want: "apps/v1"},
		"DaemonSet":   {kind: "DaemonSet", want: "apps/v1"},
		"ReplicaSet":  {kind: "ReplicaSet", want: "apps/v1"},
		"Job":         {kind: "Job", want: "batch/v1"},
		"CronJob":     {kind: "CronJob", want: "batch/v1"},
		"Pod":         {kind: "Pod", want: "v1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := MakeConsumer("c").Target(tc.kind, "n", "main").Obj().Target
			want := v1alpha1.ConsumerTarget{APIVersion: tc.want, Kind: tc.kind, Name: "n", Container: "main"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Target (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestObjAndCloneCopy checks that objects taken from a builder, and clones
// of it, do not change when the builder goes on, so that one builder can
// seed several test objects.
func TestObjAndCloneCopy(t *testing.T) {
	w := MakeHPAIntent("a", "ns").Placement("p").
		Consumer(MakeConsumer("c").Target("Deployment", "d", "main").
			Requirement(MakeResource("cpu", "cpu").Requests("1").Obj()).Obj())
	first := w.Obj()
	clone := w.Clone()
	want := first.DeepCopy()

	w.Placement("q").Consumer(MakeConsumer("other").Obj())
	w.Spec.Consumers[0].Requirements[0].Resource.Requests.Add(resource.MustParse("1"))
	clone.Placement("r")

	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("Object taken before the builder changed (-want,+got):\n%s", diff)
	}
	wantClone := want.DeepCopy()
	wantClone.Spec.PlacementRef.Name = "r"
	if diff := cmp.Diff(wantClone, clone.Obj()); diff != "" {
		t.Errorf("Clone after the original changed (-want,+got):\n%s", diff)
	}
}

func TestFwallHPAIntent(t *testing.T) {
	q := func(s string) *resource.Quantity { return ptr.To(resource.MustParse(s)) }
	want := &v1alpha1.HPAIntent{}
	want.APIVersion = "fleetfit.io/v1alpha1"
	want.Kind = "HPAIntent"
	want.Name = "fwall"
	want.Namespace = "ns"
	want.Spec = v1alpha1.HPAIntentSpec{
		PlacementRef: v1alpha1.PlacementRef{Name: "fwall"},
		Consumers: []v1alpha1.ResourceConsumer{
			{
				Name:         "core-fwall",
				Target:       v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "core-fwall", Container: "palo-alto-e3000"},
				ExclusiveCPU: true,
				Requirements: []v1alpha1.ResourceRequirement{
					{Name: "cpu", Resource: &v1alpha1.ResourceAmount{Name: "cpu", Requests: q("4"), Limits: q("4")}},
					{Name: "memory", Resource: &v1alpha1.ResourceAmount{Name: "memory", Requests: q("1000"), Limits: q("1000"), Units: "MB"}},
					{Name: "gpu", Mandatory: ptr.To(false), Weight: ptr.To[int32](9), Resource: &v1alpha1.ResourceAmount{Name: "nvidia.com/gpu", Limits: q("1")}},
				},
			},
			{
				Name:   "api-server",
				Target: v1alpha1.ConsumerTarget{APIVersion: "apps/v1", Kind: "Deployment", Name: "api-server", Container: "nginx"},
				Requirements: []v1alpha1.ResourceRequirement{
					{Name: "cpu", Resource: &v1alpha1.ResourceAmount{Name: "cpu", Requests: q("1"), Limits: q("2")}},
					{Name: "memory", Resource: &v1alpha1.ResourceAmount{Name: "memory", Requests: q("200"), Units: "MB"}},
				},
			},
		},
	}
	if diff := cmp.Diff(want, FwallHPAIntent("ns").Obj()); diff != "" {
		t.Errorf("FwallHPAIntent (-want,+got):\n%s", diff)
	}
}

func TestManifest(t *testing.T) {
	deployment := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "api-server"}}
	got := MakeHPAIntent("a", "ns").Manifest(deployment).Manifest(deployment).Obj().Spec.Workload
	want := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api-server"}}`
	if got == nil || len(got.Manifests) != 2 {
		t.Fatalf("Workload = %+v, want two manifests", got)
	}
	if diff := cmp.Diff([]string{want, want}, []string{string(got.Manifests[0].Raw), string(got.Manifests[1].Raw)}); diff != "" {
		t.Errorf("Manifests (-want,+got):\n%s", diff)
	}
}
