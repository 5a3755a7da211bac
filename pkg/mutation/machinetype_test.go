package mutation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/machinegroup"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

const (
	mtGroup  = "general-machine"
	mtXLarge = "compute-xlarge"
	mtMedium = "compute-medium"
)

// machineType is a requirement that each replica take one machine of a type
// of the group general-machine; weight > 0 makes it optional.
func machineType(name, machineType string, weight int32) v1alpha1.ResourceRequirement {
	w := utiltesting.MakeRequirement(name)
	if weight > 0 {
		w.Optional(weight)
	}
	r := w.Obj()
	r.MachineType = &v1alpha1.MachineTypeRequirement{Group: mtGroup, Name: machineType}
	return r
}

// trainers resolves an intent of machine-type consumers: trainer takes a
// compute-xlarge in its container train, next to a log shipper that asks for
// resources of its own, in a zone; evaluator, a Job, would like a
// compute-medium or a compute-xlarge; tuner, a Pod that names no container,
// takes a compute-medium and would like a compute-xlarge.
func trainers(t *testing.T) *hpa.Resolved {
	t.Helper()
	zone := utiltesting.MakeFeature("zone", "topology.kubernetes.io/zone").Values("a", "b").Obj()
	trainerLabels := map[string]string{"app": "trainer"}
	intent := utiltesting.MakeHPAIntent("trainers", "ml").Placement("trainers").Consumer(
		utiltesting.MakeConsumer("trainer").Target("Deployment", "trainer", "train").
			Requirement(machineType("xlarge", mtXLarge, 0), zone).Obj(),
		utiltesting.MakeConsumer("evaluator").Target("Job", "evaluator", "").
			Requirement(machineType("medium", mtMedium, 9), machineType("xlarge", mtXLarge, 1)).Obj(),
		utiltesting.MakeConsumer("tuner").Target("Pod", "tuner", "").
			Requirement(machineType("medium", mtMedium, 0), machineType("xlarge", mtXLarge, 5)).Obj(),
	).Manifest(&appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "trainer"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: trainerLabels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: trainerLabels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					ctr("log-shipper", rl("cpu", "100m", "memory", "64Mi"), rl("memory", "64Mi")), ctr("train", nil, nil),
				}},
			},
		},
	}).Manifest(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "evaluator"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{ctr("eval", nil, nil)},
		}}},
	}).Manifest(&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "tuner"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{ctr("tune", nil, nil)}},
	}).Obj()
	r, err := hpa.Resolve(intent)
	if err != nil {
		t.Fatalf("Resolving the trainers intent: %v", err)
	}
	return r
}

func TestForConsumerMachineType(t *testing.T) {
	zone := corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}
	cases := map[string]struct {
		consumer string
		optional []string
		want     Mutation
	}{
		"a mandatory machine type, its container and a feature": {
			consumer: "trainer",
			want: Mutation{
				Container: "train", Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{},
				Features: []corev1.NodeSelectorRequirement{zone},
				Labels:   machinegroup.GuestLabels(mtGroup, mtXLarge, "train"),
			},
		},
		"optional machine types only rank clusters": {
			consumer: "evaluator",
			optional: []string{"xlarge", "medium"},
			want:     Mutation{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}},
		},
		"an optional machine type beside the mandatory one": {
			consumer: "tuner",
			optional: []string{"xlarge"},
			want: Mutation{
				Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{},
				Labels: machinegroup.GuestLabels(mtGroup, mtMedium, ""),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := trainers(t)
			got, err := ForConsumer(r, consumer(t, r, tc.consumer), tc.optional)
			if err != nil {
				t.Fatalf("ForConsumer failed: %v", err)
			}
			if diff := cmp.Diff(tc.want, got, quantityEqual); diff != "" {
				t.Errorf("Unexpected mutation (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestMachineTypeDelivery mutates the trainer Deployment as the hub delivers
// it: a guest of compute-xlarge whose container train gets the type on the
// managed cluster, so no container gets resources from the hub, the log
// shipper keeps its own, and the user's labels and selector stay.
func TestMachineTypeDelivery(t *testing.T) {
	r := trainers(t)
	c := consumer(t, r, "trainer")
	m, err := ForConsumer(r, c, nil)
	if err != nil {
		t.Fatalf("ForConsumer failed: %v", err)
	}
	obj := r.Manifests[c.Manifest].DeepCopy()
	if err := mutateTwice(t, obj, m); err != nil {
		t.Fatalf("Mutate failed: %v", err)
	}
	var got appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &got); err != nil {
		t.Fatalf("Decoding the mutated Deployment: %v", err)
	}
	var want appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(r.Manifests[c.Manifest].Object, &want); err != nil {
		t.Fatalf("Decoding the Deployment: %v", err)
	}
	want.Spec.Template.Labels = map[string]string{
		"app":                                "trainer",
		machinegroup.LabelMachineGroup:       mtGroup,
		machinegroup.LabelMachineType:        mtXLarge,
		machinegroup.LabelPodRole:            machinegroup.PodRoleGuest,
		machinegroup.LabelInjectingContainer: "train",
	}
	want.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}},
		}}},
	}}
	if diff := cmp.Diff(want, got, quantityEqual); diff != "" {
		t.Errorf("Unexpected Deployment (-want,+got):\n%s", diff)
	}
}
