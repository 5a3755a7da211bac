package mutation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fleetfit/fleetfit/pkg/machinegroup"
)

// withPodLabels sets the labels of obj's pods, where its kind keeps them
// (a Pod's own labels replace the object's "app: w").
func withPodLabels(obj *unstructured.Unstructured, labels map[string]any) *unstructured.Unstructured {
	path := podMetadataPath(podSpecAt[obj.GetKind()])
	if labels == nil {
		unstructured.RemoveNestedField(obj.Object, append(path, "labels")...)
		return obj
	}
	if err := unstructured.SetNestedMap(obj.Object, labels, append(path, "labels")...); err != nil {
		panic(err)
	}
	return obj
}

func TestMutateLabels(t *testing.T) {
	spec := func() *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{ctr("log-shipper", rl("cpu", "100m"), nil), ctr("train", nil, nil)}}
	}
	guest := machinegroup.GuestLabels("general-machine", "compute-xlarge", "train")
	guestAnd := func(extra map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range guest {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	kinds := map[string]string{
		"Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1",
		"Job": "batch/v1", "CronJob": "batch/v1", "Pod": "v1",
	}
	cases := map[string]struct {
		labels map[string]any // the pods' labels in the manifest; nil: none
		m      Mutation
		want   map[string]any // the pods' labels afterwards
	}{
		"added to a template without labels": {
			m:    Mutation{Container: "train", Labels: guest},
			want: guestAnd(nil),
		},
		"the user's labels stay": {
			labels: map[string]any{"app": "trainer", "team": "ml"},
			m:      Mutation{Container: "train", Labels: guest},
			want:   guestAnd(map[string]any{"app": "trainer", "team": "ml"}),
		},
		"labels the user already wrote with the same values": {
			labels: guestAnd(map[string]any{"app": "trainer"}),
			m:      Mutation{Container: "train", Labels: guest},
			want:   guestAnd(map[string]any{"app": "trainer"}),
		},
		"labels alone, on no container": {
			labels: map[string]any{"app": "trainer"},
			m:      Mutation{Labels: map[string]string{"fleetfit.io/hpaintent-namespace": "ml", "fleetfit.io/hpaintent-name": "trainer"}},
			want:   map[string]any{"app": "trainer", "fleetfit.io/hpaintent-namespace": "ml", "fleetfit.io/hpaintent-name": "trainer"},
		},
		"with node affinity for features": {
			labels: map[string]any{"app": "trainer"},
			m:      Mutation{Labels: guest, Features: []corev1.NodeSelectorRequirement{zoneA}},
			want:   guestAnd(map[string]any{"app": "trainer"}),
		},
	}
	for kind, apiVersion := range kinds {
		for name, tc := range cases {
			t.Run(kind+"/"+name, func(t *testing.T) {
				obj := withPodLabels(object(apiVersion, kind, spec()), tc.labels)
				if err := mutateTwice(t, obj, tc.m); err != nil {
					t.Fatalf("Mutate failed: %v", err)
				}
				wantSpec := spec()
				if len(tc.m.Features) > 0 {
					wantSpec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
							NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: tc.m.Features}},
						},
					}}
				}
				// Only the labels and the affinity change: no container gets resources.
				want := withPodLabels(object(apiVersion, kind, wantSpec), tc.want)
				if diff := cmp.Diff(want.Object, obj.Object); diff != "" {
					t.Errorf("Unexpected object (-want,+got):\n%s", diff)
				}
			})
		}
	}
}

func TestMutateLabelErrors(t *testing.T) {
	spec := &corev1.PodSpec{Containers: []corev1.Container{ctr("train", nil, nil)}}
	guest := machinegroup.GuestLabels("general-machine", "compute-xlarge", "train")
	nullTemplateLabels := object("apps/v1", "Deployment", spec)
	if err := unstructured.SetNestedField(nullTemplateLabels.Object, "none", "spec", "template", "metadata"); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		m    Mutation
		want string
	}{
		"another machine type": {
			obj: withPodLabels(object("apps/v1", "Deployment", spec),
				map[string]any{"app": "trainer", machinegroup.LabelMachineType: "compute-medium"}),
			m: Mutation{Labels: guest},
			want: `Deployment w: spec.template.metadata.labels[machines.fleetfit.io/machine-type] is "compute-medium" where fleetfit delivers the pods with "compute-xlarge"; ` +
				`remove the label from the manifest`,
		},
		"another injecting container on a Pod": {
			obj:  withPodLabels(object("v1", "Pod", spec), map[string]any{machinegroup.LabelInjectingContainer: "log-shipper"}),
			m:    Mutation{Labels: guest},
			want: `Pod w: metadata.labels[machines.fleetfit.io/injecting-container] is "log-shipper" where fleetfit delivers the pods with "train"; remove the label from the manifest`,
		},
		"a reservation's role in a CronJob": {
			obj: withPodLabels(object("batch/v1", "CronJob", spec),
				map[string]any{machinegroup.LabelPodRole: machinegroup.PodRoleReservation}),
			m: Mutation{Labels: guest},
			want: `CronJob w: spec.jobTemplate.spec.template.metadata.labels[machines.fleetfit.io/pod-role] is "reservation" where fleetfit delivers the pods with "guest"; ` +
				`remove the label from the manifest`,
		},
		"another intent's name": {
			obj: withPodLabels(object("batch/v1", "Job", spec), map[string]any{"fleetfit.io/hpaintent-name": "other"}),
			m:   Mutation{Labels: map[string]string{"fleetfit.io/hpaintent-namespace": "ml", "fleetfit.io/hpaintent-name": "trainer"}},
			want: `Job w: spec.template.metadata.labels[fleetfit.io/hpaintent-name] is "other" where fleetfit delivers the pods with "trainer"; ` +
				`remove the label from the manifest`,
		},
		"a label that is not a string": {
			obj:  withPodLabels(object("apps/v1", "StatefulSet", spec), map[string]any{machinegroup.LabelMachineGroup: int64(1)}),
			m:    Mutation{Labels: guest},
			want: `StatefulSet w: spec.template.metadata.labels[machines.fleetfit.io/machine-group] is the number 1, not a string`,
		},
		"metadata of the wrong type": {
			obj:  nullTemplateLabels,
			m:    Mutation{Labels: guest},
			want: `Deployment w: spec.template.metadata is the string "none", not an object`,
		},
		"a missing injecting container": {
			obj:  object("apps/v1", "Deployment", spec),
			m:    Mutation{Container: "trian", Labels: guest},
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
