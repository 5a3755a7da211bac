package framework

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	st "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// TestUnschedulableChangesNothingToSchedule checks that a report whose only change is its
// list of unschedulable workloads (status.unschedulable) changes nothing the placement
// controller requeues by: the cluster may admit no more than before (MayAdmitMore), and
// whether an intent's pods fit there, relaxed for a decided cluster or not, stays the same.
// Acting on that list is the hub's rescheduling, not a requeue of every placement.
func TestUnschedulableChangesNothingToSchedule(t *testing.T) {
	nodes := []*corev1.Node{
		st.MakeNode("gpu").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").Resource("nvidia.com/gpu", "4").Obj(),
		st.MakeNode("cpu").Resource(corev1.ResourceCPU, "8").Resource(corev1.ResourceMemory, "32Gi").Obj(),
	}
	// A local workload took the GPUs.
	local := st.MakePod("default", "local", "gpu", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")})
	old := st.MakeInventory("c1", now.Add(-2*time.Minute), nodes, local)
	reported := old.DeepCopy()
	reported.Status.ObservedAt = metav1.NewTime(now.Add(-time.Minute))
	reported.Status.Revision++
	reported.Status.Unschedulable = []fleetfitv1alpha1.UnschedulableWorkload{{
		IntentNamespace: "ns", IntentName: "trainer", PodCount: 2, Since: metav1.NewTime(now.Add(-6 * time.Minute)),
		Message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu.",
	}}
	reported.Status.OmittedUnschedulable = 3

	cluster := st.MakeCluster("c1").Obj()
	before, after := NewClusterInfo(cluster, nil, old), NewClusterInfo(cluster, nil, reported)
	for name, ev := range map[string]ClusterEvent{
		"the list appears":    NewClusterEvent(before, after, now),
		"the list goes again": NewClusterEvent(after, before, now),
	} {
		t.Run(name, func(t *testing.T) {
			if ev.MayAdmitMore() {
				t.Error("MayAdmitMore() = true: every placement waiting for room would be asked")
			}
			intent := st.MakeHPAIntent("trainer", "ns").Placement("p").Consumer(
				st.MakeConsumer("trainer").Target("Deployment", "trainer", "main").Replicas(2).
					Requirement(st.MakeResource("gpu", "nvidia.com/gpu").Requests("1").Obj()).Obj()).Obj()
			compiled, err := hpa.Compile(intent)
			if err != nil {
				t.Fatal(err)
			}
			pods := podsOf(compiled)
			for _, decided := range []bool{false, true} {
				if b, a := ev.Old.HardwareFits(pods, "ns/p", decided, now), ev.New.HardwareFits(pods, "ns/p", decided, now); b != a {
					t.Errorf("decided %v: HardwareFits %v before, %v after", decided, b, a)
				}
			}
		})
	}
}
