package mutation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestMutateTolerations(t *testing.T) {
	dedicatedNoOperator := corev1.Toleration{Key: "dedicated", Value: "fw", Effect: corev1.TaintEffectNoSchedule}
	tolerateAll := corev1.Toleration{Operator: corev1.TolerationOpExists}
	unreachable := corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	unreachable60 := *unreachable.DeepCopy()
	unreachable60.TolerationSeconds = ptr.To[int64](60)

	cases := map[string]struct {
		existing, add, want []corev1.Toleration
	}{
		"none yet": {
			add:  []corev1.Toleration{gpuToleration, dedicatedToleration},
			want: []corev1.Toleration{gpuToleration, dedicatedToleration},
		},
		"existing ones kept, new ones appended": {
			existing: []corev1.Toleration{dedicatedToleration},
			add:      []corev1.Toleration{gpuToleration},
			want:     []corev1.Toleration{dedicatedToleration, gpuToleration},
		},
		"one already there is not added again": {
			existing: []corev1.Toleration{gpuToleration, dedicatedToleration},
			add:      []corev1.Toleration{dedicatedToleration, gpuToleration},
			want:     []corev1.Toleration{gpuToleration, dedicatedToleration},
		},
		"an empty operator is Equal": {
			existing: []corev1.Toleration{dedicatedNoOperator},
			add:      []corev1.Toleration{dedicatedToleration},
			want:     []corev1.Toleration{dedicatedNoOperator},
		},
		"a toleration that covers another does not count": {
			existing: []corev1.Toleration{tolerateAll},
			add:      []corev1.Toleration{gpuToleration},
			want:     []corev1.Toleration{tolerateAll, gpuToleration},
		},
		"tolerationSeconds tell tolerations apart": {
			existing: []corev1.Toleration{unreachable},
			add:      []corev1.Toleration{unreachable, unreachable60},
			want:     []corev1.Toleration{unreachable, unreachable60},
		},
		"nothing to add": {
			existing: []corev1.Toleration{dedicatedToleration},
			want:     []corev1.Toleration{dedicatedToleration},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := func(ts []corev1.Toleration) *corev1.PodSpec {
				return &corev1.PodSpec{Containers: []corev1.Container{ctr("app", nil, nil)}, Tolerations: ts}
			}
			obj := object("apps/v1", "DaemonSet", spec(tc.existing))
			if err := mutateTwice(t, obj, Mutation{Tolerations: tc.add}); err != nil {
				t.Fatalf("Mutate failed: %v", err)
			}
			if diff := cmp.Diff(object("apps/v1", "DaemonSet", spec(tc.want)).Object, obj.Object); diff != "" {
				t.Errorf("Unexpected object (-want,+got):\n%s", diff)
			}
		})
	}
}
