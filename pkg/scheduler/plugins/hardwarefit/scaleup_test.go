package hardwarefit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/scheduler/framework"
)

// growing is a cluster of one 8-core node without GPUs and a ready NodePool "gpu" that can
// launch g6.12xlarge (48 cores, 4 GPUs), tainted nvidia.com/gpu=present:NoSchedule (which a pod
// requesting GPUs tolerates, as the ExtendedResourceToleration admission plugin makes it), with
// limits of 16 GPUs of which used are in use.
func growing(name string, used int64) cluster {
	c := reporting(name, nodes("n", 1, cpuNode("8")))
	c.inv.Status.NodePools = []fleetfitv1alpha1.ReportedNodePool{{
		Name: "gpu", Provider: "karpenter", Ready: true, ShapesFrom: fleetfitv1alpha1.ShapesFromConfigMap,
		Taints: []corev1.Taint{{Key: gpu, Value: "present", Effect: corev1.TaintEffectNoSchedule}},
		Limits: corev1.ResourceList{gpu: resource.MustParse("16")},
		Usage:  corev1.ResourceList{gpu: *resource.NewQuantity(used, resource.DecimalSI)},
		Shapes: []fleetfitv1alpha1.PoolShape{{
			Name: "g6.12xlarge", MaxNodes: 4,
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("48"), gpu: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")},
			Labels:      map[string]string{"node.kubernetes.io/instance-type": "g6.12xlarge"},
		}},
	}}
	return c
}

// fourGPUs is an intent of one pod needing 4 GPUs on one node.
func fourGPUs(policy fleetfitv1alpha1.ScaleUpPolicy) *fleetfitv1alpha1.HPAIntent {
	in := newIntent(consumer("train", 1, "4").Requirement(fleetfitv1alpha1.ResourceRequirement{
		Name: "gpu", Resource: &fleetfitv1alpha1.ResourceAmount{Name: gpu, Limits: ptr.To(resource.MustParse("4"))},
	}))
	in.Spec.ScaleUp = &fleetfitv1alpha1.ScaleUp{Policy: policy}
	return in
}

func TestFilterScaleUp(t *testing.T) {
	tests := map[string]struct {
		clusters    []cluster
		policy      fleetfitv1alpha1.ScaleUpPolicy
		number      *int32
		want        []string
		wantReasons map[string]string
		wantNotes   map[string]string
	}{
		"no cluster fits now: the one that can grow": {
			clusters: []cluster{growing("grows", 0), reporting("small", nodes("n", 2, gpuNode("T4").Resource(gpu, "1")))},
			want:     []string{"grows"},
			wantReasons: map[string]string{
				"small": "consumer app/train: no schedulable node has 4 nvidia.com/gpu free; the best has 1",
			},
			wantNotes: map[string]string{"grows": "fits after scale-up: 1 node of g6.12xlarge from NodePool gpu (limit: 4 more)"},
		},
		"a cluster fits now: the one that can grow is not needed": {
			clusters: []cluster{growing("grows", 0), reporting("big", nodes("n", 1, gpuNode("A100").Resource(gpu, "8")))},
			want:     []string{"big"},
			wantReasons: map[string]string{
				"grows": "fits after scale-up: 1 node of g6.12xlarge from NodePool gpu (limit: 4 more); not chosen: enough clusters fit now without adding nodes",
			},
		},
		"two clusters wanted, one fits now: both": {
			clusters:  []cluster{growing("grows", 0), reporting("big", nodes("n", 1, gpuNode("A100").Resource(gpu, "8")))},
			number:    ptr.To[int32](2),
			want:      []string{"big", "grows"},
			wantNotes: map[string]string{"grows": "fits after scale-up: 1 node of g6.12xlarge from NodePool gpu (limit: 4 more)"},
		},
		"the pool's limit is reached: never": {
			clusters: []cluster{growing("full", 16)},
			wantReasons: map[string]string{
				"full": "consumer app/train: no schedulable node has 4 nvidia.com/gpu free; the best has 0; no NodePool of the cluster can add the nodes it needs within its limits",
			},
		},
		"an intent that may not wait: never": {
			clusters: []cluster{growing("grows", 0)},
			policy:   fleetfitv1alpha1.ScaleUpNever,
			wantReasons: map[string]string{
				"grows": "consumer app/train: no schedulable node has 4 nvidia.com/gpu free; the best has 0",
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			snap := snapshot(tc.clusters)
			in := fourGPUs(tc.policy)
			req := request(snap, []*fleetfitv1alpha1.HPAIntent{in})
			req.Placement.Spec.NumberOfClusters = tc.number
			rec := &recorder{snap: snap, reasons: map[string]string{}}
			p := newPlugin(t)
			state := framework.NewCycleState()
			got, status := p.Filter(t.Context(), state, snap, req, framework.NewFullBitset(snap.NumClusters()), rec)
			if !status.IsSuccess() {
				t.Fatal(status)
			}
			if diff := cmp.Diff(tc.want, names(snap, got)); diff != "" {
				t.Errorf("feasible (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReasons, rec.reasons, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
			notes := map[string]string{}
			got.ForEach(func(i int) {
				if n := p.Note(state, snap, req, i); n != "" {
					notes[snap.Cluster(i).Name()] = n
				}
			})
			if diff := cmp.Diff(tc.wantNotes, notes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScaleUpReservations: a burst of placements does not promise one new node twice. With
// room for one more node in the pool (limit 8 GPUs, 4 in use), a reservation of another
// placement that took it leaves nothing.
func TestScaleUpReservations(t *testing.T) {
	compiled, err := hpa.Compile(fourGPUs(""))
	if err != nil {
		t.Fatal(err)
	}
	pod := &compiled.Pods[0]
	c := growing("grows", 12)
	snap := snapshot([]cluster{c.reserving(framework.Reservation{Placement: "ns/other", Request: pod.Request, Replicas: 1, Until: now.Add(time.Minute)})})
	in := fourGPUs("")
	req := request(snap, []*fleetfitv1alpha1.HPAIntent{in})
	got, _ := newPlugin(t).Filter(t.Context(), framework.NewCycleState(), snap, req, framework.NewFullBitset(1), nil)
	if got.Count() != 0 {
		t.Errorf("the pool's last node was promised to another placement, yet the cluster passed")
	}
	snap = snapshot([]cluster{growing("grows", 12)})
	got, _ = newPlugin(t).Filter(t.Context(), framework.NewCycleState(), snap, request(snap, []*fleetfitv1alpha1.HPAIntent{in}), framework.NewFullBitset(1), nil)
	if got.Count() != 1 {
		t.Errorf("without the reservation the pool's last node is free, yet the cluster did not pass")
	}
}
