package agent

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/agent/reporter"
	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	"github.com/fleetfit/fleetfit/pkg/textcap"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// unschedulableNS holds this file's pods on the spoke.
const unschedulableNS = "unschedulable-test"

// TestAgentReportsUnschedulablePods runs cluster1's agent with its restricted identities,
// marks delivered pods Unschedulable as kube-scheduler does (through the status subresource),
// and checks that the hub's ClusterInventory says so per intent; that a sync with the same
// pods writes nothing; and that binding a pod lowers its intent's count.
func TestAgentReportsUnschedulablePods(t *testing.T) {
	ctx := t.Context()
	cluster := framework.SpokeName(0)
	spoke := fleet.Spokes[0].AdminClient()
	hub := fleetfitclient.NewForConfigOrDie(fleet.Hub.AdminConfig())
	if err := fleet.RegisterSpokes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := framework.ApplyAgentRBAC(ctx, fleet.Hub, fleet.Spokes[0], cluster); err != nil {
		t.Fatal(err)
	}
	if _, err := spoke.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unschedulableNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	const node = "unschedulable-cpu-0"
	if err := framework.CreateNode(ctx, spoke, ut.MakeNode(node).Resource("cpu", "8").Resource("memory", "32Gi").Obj()); err != nil {
		t.Fatal(err)
	}
	pods := spoke.CoreV1().Pods(unschedulableNS)
	t.Cleanup(func() {
		// Pods first: pods bound to a missing node still count.
		ctx := context.Background()
		for _, name := range []string{"trainer-0", "trainer-1", "web-0", "plain-0"} {
			_ = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		}
		_ = spoke.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
	})

	noGPU := "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	// A scheduler's message on a diverse cluster, longer than a report keeps.
	long := "0/1000 nodes are available: " + strings.Repeat("1 node(s) had untolerated taint {example.com/pool: x}, ", 40)
	// The API server keeps condition times to the second.
	start := metav1.NewTime(time.Now().Add(-10 * time.Minute).Truncate(time.Second))
	create := func(name, intent string, labelled bool) {
		t.Helper()
		p := ut.MakePod(unschedulableNS, name, "", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})
		if labelled {
			p.Labels = map[string]string{v1alpha1.LabelIntentNamespace: "team-a", v1alpha1.LabelIntentName: intent}
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// markUnschedulable writes what kube-scheduler writes of a pod it cannot place.
	markUnschedulable := func(name, message string, since metav1.Time) {
		t.Helper()
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: message, LastTransitionTime: since,
		})
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("trainer-0", "trainer", true)
	create("trainer-1", "trainer", true)
	create("web-0", "web", true)
	create("plain-0", "", false)
	markUnschedulable("trainer-0", noGPU, start)
	markUnschedulable("trainer-1", "newer", metav1.NewTime(start.Add(time.Minute)))
	markUnschedulable("web-0", long, start)
	markUnschedulable("plain-0", noGPU, start)

	var reports atomic.Int32
	startAgent(t, 0, func(o *reporter.Options) {
		o.OnReport = func(*v1alpha1.ClusterInventoryStatus) { reports.Add(1) }
	})

	unschedulable := func(want []v1alpha1.UnschedulableWorkload) *v1alpha1.ClusterInventory {
		t.Helper()
		var inv *v1alpha1.ClusterInventory
		framework.Eventually(t, func(ctx context.Context) error {
			var err error
			if inv, err = hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{}); err != nil {
				return err
			}
			if diff := cmp.Diff(want, inv.Status.Unschedulable); diff != "" || inv.Status.OmittedUnschedulable != 0 {
				return fmt.Errorf("unschedulable on the hub, %d omitted (-want,+got):\n%s", inv.Status.OmittedUnschedulable, diff)
			}
			return nil
		})
		return inv
	}
	want := []v1alpha1.UnschedulableWorkload{
		{IntentNamespace: "team-a", IntentName: "trainer", PodCount: 2, Since: start, Message: noGPU},
		{IntentNamespace: "team-a", IntentName: "web", PodCount: 1, Since: start, Message: textcap.Truncate(long, v1alpha1.MaxUnschedulableMessage)},
	}
	inv := unschedulable(want)
	// The whole report is what pkg/inventory computes from the spoke's objects.
	waitForReport(t, spoke, hub, cluster)

	t.Run("a sync with the same pods writes nothing", func(t *testing.T) {
		// A bound pod's annotation changes nothing reported but makes the agent sync.
		if err := bind(ctx, pods, "plain-0", node); err != nil {
			t.Fatal(err)
		}
		inv = waitForReport(t, spoke, hub, cluster)
		p, err := pods.Get(ctx, "plain-0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Annotations = map[string]string{"touched": "yes"}
		if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		seen := reports.Load()
		framework.Eventually(t, func(context.Context) error {
			if reports.Load() <= seen {
				return fmt.Errorf("no report after the annotation yet")
			}
			return nil
		})
		after, err := hub.FleetfitV1alpha1().ClusterInventories(cluster).Get(ctx, cluster, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if after.ResourceVersion != inv.ResourceVersion || after.Status.Revision != inv.Status.Revision {
			t.Errorf("the inventory was written again (revision %d to %d) though nothing it reports changed", inv.Status.Revision, after.Status.Revision)
		}
	})

	t.Run("a pod bound", func(t *testing.T) {
		if err := bind(ctx, pods, "trainer-0", node); err != nil {
			t.Fatal(err)
		}
		want[0].PodCount, want[0].Since, want[0].Message = 1, metav1.NewTime(start.Add(time.Minute)), "newer"
		after := unschedulable(want)
		if after.Status.Revision <= inv.Status.Revision {
			t.Errorf("revision %d after a change, want more than %d", after.Status.Revision, inv.Status.Revision)
		}
		waitForReport(t, spoke, hub, cluster)
	})

	t.Run("the last pods go", func(t *testing.T) {
		for _, name := range []string{"trainer-1", "web-0"} {
			if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				t.Fatal(err)
			}
		}
		unschedulable(nil)
	})
}

// bind binds a pod to a node as kube-scheduler does, which sets its PodScheduled condition.
func bind(ctx context.Context, pods interface {
	Bind(context.Context, *corev1.Binding, metav1.CreateOptions) error
}, name, node string) error {
	return pods.Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: unschedulableNS},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}
