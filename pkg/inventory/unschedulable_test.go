package inventory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

var unschedulableEpoch = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// at is unschedulableEpoch plus minutes.
func at(minutes int) metav1.Time {
	return metav1.NewTime(unschedulableEpoch.Add(time.Duration(minutes) * time.Minute))
}

// makePendingPod starts a Pending pod without a node, created at unschedulableEpoch, that
// belongs to the intent namespace/name.
func makePendingPod(name, namespace, intent string) *podWrapper {
	w := makePod(name, "").Phase(corev1.PodPending)
	w.CreationTimestamp = at(0)
	w.Labels = map[string]string{v1alpha1.LabelIntentNamespace: namespace, v1alpha1.LabelIntentName: intent}
	return w
}

// Scheduled sets the pod's PodScheduled condition.
func (w *podWrapper) Scheduled(status corev1.ConditionStatus, reason, message string, since metav1.Time) *podWrapper {
	w.Status.Conditions = append(w.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: status, Reason: reason, Message: message, LastTransitionTime: since,
	})
	return w
}

// Unschedulable marks the pod as kube-scheduler does when no node takes it.
func (w *podWrapper) Unschedulable(message string, since metav1.Time) *podWrapper {
	return w.Scheduled(corev1.ConditionFalse, corev1.PodReasonUnschedulable, message, since)
}

const noGPU = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."

func TestSummarizeUnschedulable(t *testing.T) {
	long := strings.Repeat("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. ", 20)
	deleting := makePendingPod("deleting", "team-a", "trainer").Unschedulable(noGPU, at(1))
	deleting.DeletionTimestamp = &metav1.Time{Time: unschedulableEpoch}
	noLabel := makePendingPod("unlabelled", "team-a", "trainer").Unschedulable(noGPU, at(1))
	delete(noLabel.Labels, v1alpha1.LabelIntentName)
	noNamespace := makePendingPod("no-namespace", "", "trainer").Unschedulable(noGPU, at(1))
	noTime := makePendingPod("no-time", "team-a", "trainer").Unschedulable(noGPU, metav1.Time{})

	cases := map[string]struct {
		pods        []*corev1.Pod
		limit       int
		want        []v1alpha1.UnschedulableWorkload
		wantOmitted int32
	}{
		"no pods": {},
		"pods without both labels count nothing": {
			pods: []*corev1.Pod{
				makePod("plain", "").Phase(corev1.PodPending).Unschedulable(noGPU, at(1)).Obj(),
				noLabel.Obj(), noNamespace.Obj(),
			},
		},
		"scheduled and running pods count nothing": {
			pods: []*corev1.Pod{
				makePendingPod("bound", "team-a", "trainer").Scheduled(corev1.ConditionTrue, "", "", at(1)).Obj(),
				func() *corev1.Pod {
					w := makePendingPod("running", "team-a", "trainer").Phase(corev1.PodRunning)
					w.Spec.NodeName = "n-0"
					return w.Obj()
				}(),
			},
		},
		"a pod bound whose condition still says Unschedulable counts nothing": {
			pods: []*corev1.Pod{func() *corev1.Pod {
				w := makePendingPod("just-bound", "team-a", "trainer").Unschedulable(noGPU, at(1))
				w.Spec.NodeName = "n-0"
				return w.Obj()
			}()},
		},
		"PodScheduled=False for another reason, or not yet tried, counts nothing": {
			pods: []*corev1.Pod{
				makePendingPod("gated", "team-a", "trainer").Scheduled(corev1.ConditionFalse, corev1.PodReasonSchedulingGated, "waiting for gates", at(1)).Obj(),
				makePendingPod("error", "team-a", "trainer").Scheduled(corev1.ConditionFalse, corev1.PodReasonSchedulerError, "binding failed", at(1)).Obj(),
				makePendingPod("untried", "team-a", "trainer").Obj(),
			},
		},
		"pods being deleted or finished count nothing": {
			pods: []*corev1.Pod{
				deleting.Obj(),
				makePendingPod("failed", "team-a", "trainer").Unschedulable(noGPU, at(1)).Phase(corev1.PodFailed).Obj(),
			},
		},
		"one intent: counted with its oldest pod's time and message": {
			pods: []*corev1.Pod{
				makePendingPod("t-1", "team-a", "trainer").Unschedulable("newer", at(5)).Obj(),
				makePendingPod("t-0", "team-a", "trainer").Unschedulable(noGPU, at(2)).Obj(),
				makePendingPod("t-2", "team-a", "trainer").Scheduled(corev1.ConditionTrue, "", "", at(1)).Obj(),
			},
			want: []v1alpha1.UnschedulableWorkload{
				{IntentNamespace: "team-a", IntentName: "trainer", PodCount: 2, Since: at(2), Message: noGPU},
			},
		},
		"a condition without a time counts from the pod's creation": {
			pods: []*corev1.Pod{
				makePendingPod("t-0", "team-a", "trainer").Unschedulable("later", at(3)).Obj(),
				noTime.Obj(),
			},
			want: []v1alpha1.UnschedulableWorkload{
				{IntentNamespace: "team-a", IntentName: "trainer", PodCount: 2, Since: at(0), Message: noGPU},
			},
		},
		"several intents, sorted by namespace and name": {
			pods: []*corev1.Pod{
				makePendingPod("w-0", "team-b", "web").Unschedulable("b web", at(1)).Obj(),
				makePendingPod("t-0", "team-b", "trainer").Unschedulable("b trainer", at(2)).Obj(),
				makePendingPod("t-0", "team-a", "trainer").Unschedulable("a trainer", at(3)).Obj(),
				makePendingPod("t-1", "team-a", "trainer").Unschedulable("a trainer", at(4)).Obj(),
			},
			want: []v1alpha1.UnschedulableWorkload{
				{IntentNamespace: "team-a", IntentName: "trainer", PodCount: 2, Since: at(3), Message: "a trainer"},
				{IntentNamespace: "team-b", IntentName: "trainer", PodCount: 1, Since: at(2), Message: "b trainer"},
				{IntentNamespace: "team-b", IntentName: "web", PodCount: 1, Since: at(1), Message: "b web"},
			},
		},
		"the same intent's pods in several namespaces of the cluster count together": {
			pods: []*corev1.Pod{
				func() *corev1.Pod {
					w := makePendingPod("t-0", "team-a", "trainer").Unschedulable("here", at(2))
					w.Namespace = "ns-1"
					return w.Obj()
				}(),
				makePendingPod("t-0", "team-a", "trainer").Unschedulable("there", at(2)).Obj(),
			},
			// The same second: the pod first by namespace and name is the one reported.
			want: []v1alpha1.UnschedulableWorkload{
				{IntentNamespace: "team-a", IntentName: "trainer", PodCount: 2, Since: at(2), Message: "there"},
			},
		},
		"over the bound: those that waited longest are kept, the others counted": {
			pods: []*corev1.Pod{
				makePendingPod("p", "team-a", "newest").Unschedulable("newest", at(9)).Obj(),
				makePendingPod("p", "team-z", "oldest").Unschedulable("oldest", at(1)).Obj(),
				makePendingPod("p", "team-b", "middle").Unschedulable("middle", at(5)).Obj(),
				makePendingPod("p", "team-c", "tie").Unschedulable("tie", at(9)).Obj(),
			},
			limit: 2,
			want: []v1alpha1.UnschedulableWorkload{
				{IntentNamespace: "team-b", IntentName: "middle", PodCount: 1, Since: at(5), Message: "middle"},
				{IntentNamespace: "team-z", IntentName: "oldest", PodCount: 1, Since: at(1), Message: "oldest"},
			},
			wantOmitted: 2,
		},
		"a bound of zero omits every intent": {
			pods:        []*corev1.Pod{makePendingPod("p", "team-a", "trainer").Unschedulable(noGPU, at(1)).Obj()},
			limit:       -1,
			wantOmitted: 1,
		},
		"a long message is cut": {
			pods: []*corev1.Pod{makePendingPod("p", "team-a", "trainer").Unschedulable(long, at(1)).Obj()},
			want: []v1alpha1.UnschedulableWorkload{
				{IntentNamespace: "team-a", IntentName: "trainer", PodCount: 1, Since: at(1),
					Message: textcap.Truncate(long, v1alpha1.MaxUnschedulableMessage)},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = v1alpha1.MaxReportedUnschedulable
			}
			got, omitted := SummarizeUnschedulable(tc.pods, limit)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SummarizeUnschedulable (-want,+got):\n%s", diff)
			}
			if omitted != tc.wantOmitted {
				t.Errorf("omitted %d, want %d", omitted, tc.wantOmitted)
			}
			for _, u := range got {
				if len(u.Message) > v1alpha1.MaxUnschedulableMessage {
					t.Errorf("message of %s/%s has %d bytes, more than %d", u.IntentNamespace, u.IntentName, len(u.Message), v1alpha1.MaxUnschedulableMessage)
				}
			}
		})
	}
}

// TestSummarizeUnschedulableIgnoresOrder checks that the summary depends on the pods alone:
// a report computed again from the same pods in another order must equal the last one, or a
// heartbeat would rewrite the inventory for nothing.
func TestSummarizeUnschedulableIgnoresOrder(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 300 {
		intent := fmt.Sprintf("intent-%d", i%150)
		// Many pods in the same second, so ties are broken by the pods' names.
		pods = append(pods, makePendingPod(fmt.Sprintf("p-%d", i), fmt.Sprintf("team-%d", i%7), intent).
			Unschedulable(fmt.Sprintf("message of p-%d", i), at(i%4)).Obj())
	}
	want, wantOmitted := SummarizeUnschedulable(pods, v1alpha1.MaxReportedUnschedulable)
	if len(want) != v1alpha1.MaxReportedUnschedulable || wantOmitted == 0 {
		t.Fatalf("%d intents and %d omitted; want the bound, %d, and some omitted", len(want), wantOmitted, v1alpha1.MaxReportedUnschedulable)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		rng.Shuffle(len(pods), func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
		got, omitted := SummarizeUnschedulable(pods, v1alpha1.MaxReportedUnschedulable)
		if diff := cmp.Diff(want, got); diff != "" || omitted != wantOmitted {
			t.Fatalf("another order of the same pods gives another summary, %d omitted (-want,+got):\n%s", omitted, diff)
		}
	}
}

func TestUnschedulableChanged(t *testing.T) {
	base := makePendingPod("p", "team-a", "trainer").Unschedulable(noGPU, at(1))
	cases := map[string]struct {
		old, new *corev1.Pod
		want     bool
	}{
		"nothing it reads": {
			old: base.Obj(),
			new: func() *corev1.Pod { p := base.Obj(); p.ResourceVersion = "2"; p.Status.Message = "x"; return p }(),
		},
		"neither counts": {
			old: makePendingPod("p", "team-a", "trainer").Obj(),
			new: func() *corev1.Pod {
				p := makePendingPod("p", "team-a", "trainer").Obj()
				p.ResourceVersion = "2"
				return p
			}(),
		},
		"added unschedulable":         {new: base.Obj(), want: true},
		"added, not yet tried":        {new: makePendingPod("p", "team-a", "trainer").Obj()},
		"deleted while unschedulable": {old: base.Obj(), want: true},
		"deleted after its deletion was seen": {
			old: func() *corev1.Pod {
				p := base.Obj()
				p.DeletionTimestamp = &metav1.Time{Time: unschedulableEpoch}
				return p
			}(),
		},
		"becomes unschedulable": {old: makePendingPod("p", "team-a", "trainer").Obj(), new: base.Obj(), want: true},
		"is scheduled": {
			old:  base.Obj(),
			new:  makePendingPod("p", "team-a", "trainer").Scheduled(corev1.ConditionTrue, "", "", at(2)).Obj(),
			want: true,
		},
		"another message": {
			old:  base.Obj(),
			new:  makePendingPod("p", "team-a", "trainer").Unschedulable("0/5 nodes are available", at(1)).Obj(),
			want: true,
		},
		"another intent": {
			old:  base.Obj(),
			new:  makePendingPod("p", "team-a", "web").Unschedulable(noGPU, at(1)).Obj(),
			want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := UnschedulableChanged(tc.old, tc.new); got != tc.want {
				t.Errorf("UnschedulableChanged() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGainedIgnoresUnschedulable checks that a report whose only change is its list of
// unschedulable workloads gains nothing: the hub's placement controller requeues no
// placement that waits for room for it (framework.ClusterEvent.MayAdmitMore).
func TestGainedIgnoresUnschedulable(t *testing.T) {
	eight := makeNode("").Resources("cpu", "8", "memory", "32Gi", "pods", "110")
	old := summarize(t, DefaultConfig(), nodes(2, "n", eight), nil)
	changed := *old.DeepCopy()
	changed.Unschedulable, changed.OmittedUnschedulable = SummarizeUnschedulable([]*corev1.Pod{
		makePendingPod("p", "team-a", "trainer").Unschedulable(noGPU, at(1)).Obj(),
	}, v1alpha1.MaxReportedUnschedulable)
	if len(changed.Unschedulable) != 1 {
		t.Fatalf("unschedulable: %+v, want one entry", changed.Unschedulable)
	}
	if NewView(&changed).Gained(NewView(&old)) {
		t.Error("Gained() = true for a report that only lists unschedulable pods")
	}
	if NewView(&old).Gained(NewView(&changed)) {
		t.Error("Gained() = true for a report that only drops unschedulable pods")
	}
}
