package hpa

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// podContainer is a consumer of the Deployment web's container with replicas pods that each
// request cpu: consumers made with it are containers of one pod.
func podContainer(name, container string, replicas int32, cpu string) v1alpha1.ResourceConsumer {
	return utiltesting.MakeConsumer(name).Target("Deployment", "web", container).Replicas(replicas).
		Requirement(utiltesting.MakeResource("cpu", "cpu").Requests(cpu).Obj()).Obj()
}

// podIntent is an intent named after its placement with the given containers of web.
func podIntent(placement string, containers ...v1alpha1.ResourceConsumer) *utiltesting.HPAIntentWrapper {
	return utiltesting.MakeHPAIntent(placement, "").Placement(placement).Consumer(containers...)
}

// podValid checks the intent's Valid condition.
func podValid(status metav1.ConditionStatus, reason, message string) func(*v1alpha1.HPAIntent) error {
	return func(in *v1alpha1.HPAIntent) error {
		c := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionValid)
		if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message) {
			return fmt.Errorf("HPAIntent %s Valid condition %+v, want %s %s with %q", in.Name, c, status, reason, message)
		}
		return nil
	}
}

// TestPodContainersShareOneNode: cluster1 has two nodes of 4 cpu, cluster2 one of 8. The app
// and sidecar containers of one Deployment, 3 cpu each, need 6 cpu on one node: only cluster2
// is chosen, though cluster1 has 8 free cpu, and both consumers list cluster2 alone. The same
// amounts in two Deployments fit cluster1, one on each node. Containers of one pod whose replicas disagree
// make the intent invalid.
func TestPodContainersShareOneNode(t *testing.T) {
	e := newEnv(t, "pod-node")
	e.addNodes(0, node("pod-half-0", "4", "16Gi"), node("pod-half-1", "4", "16Gi"))
	e.addNodes(1, node("pod-big-0", "8", "32Gi"))

	e.createIntent(podIntent("pod", podContainer("app", "app", 1, "3"), podContainer("sidecar", "sidecar", 1, "3")))
	e.createPlacement(onClusters("pod", cluster(0), cluster(1)))
	apart := utiltesting.MakeConsumer("other").Target("Deployment", "api", "app").Replicas(1).
		Requirement(utiltesting.MakeResource("cpu", "cpu").Requests("3").Obj()).Obj()
	e.createIntent(podIntent("pod-apart", podContainer("app", "app", 1, "3"), apart))
	e.createPlacement(onClusters("pod-apart", cluster(0)))
	e.createIntent(podIntent("pod-disagree", podContainer("app", "app", 2, "1"), podContainer("sidecar", "sidecar", 3, "1")))
	e.createPlacement(onClusters("pod-disagree", cluster(0), cluster(1)))
	e.startHub(true)

	e.waitDecided("pod", cluster(1))
	e.waitIntent("pod", and(
		hasCondition(v1alpha1.ConditionScheduled, metav1.ConditionTrue, "Scheduled"),
		hasCandidates(allow("app", 1, cluster(1)), allow("sidecar", 1, cluster(1))),
	))
	e.explain("pod", rejectedBy(cluster(0), []string{cluster(1)}, "consumers pod/app+sidecar", "6 cpu", "the best has 4"))

	e.waitDecided("pod-apart", cluster(0))

	e.waitIntent("pod-disagree", podValid(metav1.ConditionFalse, "InvalidRequirements",
		`consumers "app" (2 replicas) and "sidecar" (3 replicas) target Deployment web`))
}
