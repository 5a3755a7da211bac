package reschedule

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/controller/action"
	utiltesting "github.com/fleetfit/fleetfit/pkg/util/testing"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const gpuMessage = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu"

func report(cluster string, pods int32, waited time.Duration) stuck {
	return stuck{cluster: cluster, UnschedulableWorkload: fleetfitv1alpha1.UnschedulableWorkload{
		IntentNamespace: "ns", IntentName: "train", PodCount: pods, Since: metav1.NewTime(now.Add(-waited)), Message: gpuMessage,
	}}
}

func move(from string, ago time.Duration, failures int32, backoffLeft time.Duration, completed bool) fleetfitv1alpha1.ClusterMove {
	m := fleetfitv1alpha1.ClusterMove{From: from, Time: metav1.NewTime(now.Add(-ago)), Failures: failures,
		BackoffUntil: metav1.NewTime(now.Add(backoffLeft)), Reason: "earlier"}
	if completed {
		m.Completed = ptr.To(metav1.NewTime(now.Add(-ago).Add(time.Minute)))
	}
	return m
}

func rescheduledCondition(status metav1.ConditionStatus, reason, message string) *metav1.Condition {
	return &metav1.Condition{Type: ConditionRescheduled, Status: status, Reason: reason, ObservedGeneration: 3, Message: message}
}

func TestJudge(t *testing.T) {
	intent := func(moves ...fleetfitv1alpha1.ClusterMove) *fleetfitv1alpha1.HPAIntent {
		in := utiltesting.MakeHPAIntent("train", "ns").Placement("p").Obj()
		in.Generation = 3
		in.Status.Moves = moves
		return in
	}
	never := intent()
	never.Spec.Rescheduling = &fleetfitv1alpha1.Rescheduling{Policy: fleetfitv1alpha1.ReschedulingNever}
	oncePerHour := intent(move("cluster1", 50*time.Minute, 1, -30*time.Minute, true))
	oncePerHour.Spec.Rescheduling = &fleetfitv1alpha1.Rescheduling{MaxMovesPerHour: ptr.To[int32](1)}

	cases := map[string]struct {
		intent  *fleetfitv1alpha1.HPAIntent
		reports []stuck
		// replacements is what the dry run decides anew for a move from each cluster.
		replacements map[string][]string
		want         verdict
		// asked are the clusters the dry run was asked to leave out.
		asked []string
	}{
		"nothing reported": {
			intent: intent(),
			want:   verdict{clear: true},
		},
		"threshold not reached": {
			intent:  intent(),
			reports: []stuck{report("cluster2", 3, 2*time.Minute)},
			want:    verdict{clear: true, requeue: 3 * time.Minute},
		},
		"a cluster that adds a node: the scale-up wait, 10m by default": {
			intent:  intent(),
			reports: []stuck{growing(report("cluster2", 3, 6*time.Minute))},
			want:    verdict{clear: true, requeue: 4 * time.Minute},
		},
		"a cluster that adds a node, for an intent that may not wait for one: unschedulableFor": {
			intent: func() *fleetfitv1alpha1.HPAIntent {
				in := intent()
				in.Spec.ScaleUp = &fleetfitv1alpha1.ScaleUp{Policy: fleetfitv1alpha1.ScaleUpNever}
				return in
			}(),
			reports:      []stuck{growing(report("cluster2", 3, 6*time.Minute))},
			replacements: map[string][]string{"cluster2": {"cluster3"}},
			asked:        []string{"cluster2"},
			want: verdict{
				move: &fleetfitv1alpha1.ClusterMove{From: "cluster2", Time: metav1.NewTime(now), Failures: 1,
					Reason:       "3 pod(s) unschedulable for 6m: " + gpuMessage,
					BackoffUntil: metav1.NewTime(now.Add(10 * time.Minute))},
				to: []string{"cluster3"},
				condition: rescheduledCondition(metav1.ConditionTrue, ReasonMoving,
					"cluster2: 3 pod(s) of the workload unschedulable for 6m: "+gpuMessage+"; moving to another cluster (cluster3 can take it)"),
			},
		},
		"threshold reached": {
			intent:       intent(),
			reports:      []stuck{report("cluster2", 3, 6*time.Minute)},
			replacements: map[string][]string{"cluster2": {"cluster3"}},
			asked:        []string{"cluster2"},
			want: verdict{
				move: &fleetfitv1alpha1.ClusterMove{From: "cluster2", Time: metav1.NewTime(now), Failures: 1,
					Reason:       "3 pod(s) unschedulable for 6m: " + gpuMessage,
					BackoffUntil: metav1.NewTime(now.Add(10 * time.Minute))},
				to: []string{"cluster3"},
				condition: rescheduledCondition(metav1.ConditionTrue, ReasonMoving,
					"cluster2: 3 pod(s) of the workload unschedulable for 6m: "+gpuMessage+"; moving to another cluster (cluster3 can take it)"),
			},
		},
		"a cluster left before doubles its back-off": {
			intent:       intent(move("cluster2", 2*time.Hour, 1, -time.Hour, true)),
			reports:      []stuck{report("cluster2", 1, 5*time.Minute)},
			replacements: map[string][]string{"cluster2": {"cluster1"}},
			asked:        []string{"cluster2"},
			want: verdict{
				move: &fleetfitv1alpha1.ClusterMove{From: "cluster2", Time: metav1.NewTime(now), Failures: 2,
					Reason:       "1 pod(s) unschedulable for 5m: " + gpuMessage,
					BackoffUntil: metav1.NewTime(now.Add(20 * time.Minute))},
				to: []string{"cluster1"},
				condition: rescheduledCondition(metav1.ConditionTrue, ReasonMoving,
					"cluster2: 1 pod(s) of the workload unschedulable for 5m: "+gpuMessage+"; moving to another cluster (cluster1 can take it)"),
			},
		},
		"a failure count written out of bounds stays at the bound, with a day's back-off": {
			intent:       intent(move("cluster2", 2*time.Hour, math.MaxInt32, -time.Hour, true)),
			reports:      []stuck{report("cluster2", 1, 5*time.Minute)},
			replacements: map[string][]string{"cluster2": {"cluster1"}},
			asked:        []string{"cluster2"},
			want: verdict{
				move: &fleetfitv1alpha1.ClusterMove{From: "cluster2", Time: metav1.NewTime(now), Failures: maxFailures,
					Reason:       "1 pod(s) unschedulable for 5m: " + gpuMessage,
					BackoffUntil: metav1.NewTime(now.Add(24 * time.Hour))},
				to: []string{"cluster1"},
				condition: rescheduledCondition(metav1.ConditionTrue, ReasonMoving,
					"cluster2: 1 pod(s) of the workload unschedulable for 5m: "+gpuMessage+"; moving to another cluster (cluster1 can take it)"),
			},
		},
		"policy Never": {
			intent:  never,
			reports: []stuck{report("cluster2", 3, 6*time.Minute)},
			want: verdict{condition: rescheduledCondition(metav1.ConditionFalse, ReasonNever,
				"cluster2: 3 pod(s) of the workload unschedulable for 6m: "+gpuMessage+"; they wait there, because rescheduling is off (spec.rescheduling.policy: Never)")},
		},
		"policy Never, threshold not reached": {
			intent:  never,
			reports: []stuck{report("cluster2", 3, time.Minute)},
			want:    verdict{clear: true, requeue: 4 * time.Minute},
		},
		"a move in progress": {
			intent:  intent(move("cluster1", 10*time.Minute, 1, 0, false)),
			reports: []stuck{report("cluster2", 3, 6*time.Minute)},
			want:    verdict{},
		},
		"backed off": {
			intent:  intent(move("cluster2", 10*time.Minute, 1, 5*time.Minute, true)),
			reports: []stuck{report("cluster2", 3, 30*time.Minute)},
			want:    verdict{},
		},
		"hourly limit": {
			intent:  oncePerHour,
			reports: []stuck{report("cluster2", 3, 6*time.Minute)},
			want: verdict{requeue: 10 * time.Minute, condition: rescheduledCondition(metav1.ConditionFalse, ReasonMoveLimit,
				"cluster2: 3 pod(s) of the workload unschedulable for 6m: "+gpuMessage+
					"; it does not move yet: it moved 1 time(s) in the last hour, at most 1 (spec.rescheduling.maxMovesPerHour), and may move again at 2025-03-01T12:10:00Z")},
		},
		"default hourly limit of two": {
			intent:  intent(move("cluster1", 50*time.Minute, 1, -30*time.Minute, true), move("cluster3", 20*time.Minute, 1, -10*time.Minute, true)),
			reports: []stuck{report("cluster2", 3, 6*time.Minute)},
			want: verdict{requeue: 10 * time.Minute, condition: rescheduledCondition(metav1.ConditionFalse, ReasonMoveLimit,
				"cluster2: 3 pod(s) of the workload unschedulable for 6m: "+gpuMessage+
					"; it does not move yet: it moved 2 time(s) in the last hour, at most 2 (spec.rescheduling.maxMovesPerHour), and may move again at 2025-03-01T12:10:00Z")},
		},
		"no replacement": {
			intent:  intent(),
			reports: []stuck{report("cluster2", 3, 6*time.Minute)},
			asked:   []string{"cluster2"},
			want: verdict{requeue: 5 * time.Minute, condition: rescheduledCondition(metav1.ConditionFalse, ReasonNoReplacement,
				"cluster2: 3 pod(s) of the workload unschedulable for 6m: "+gpuMessage+"; no other cluster can take it, so it stays")},
		},
		"several clusters: the one waiting longest moves, the others wait": {
			intent: intent(),
			reports: []stuck{
				report("cluster1", 1, 6*time.Minute), report("cluster2", 2, time.Minute), report("cluster3", 3, 8*time.Minute),
			},
			replacements: map[string][]string{"cluster1": {"cluster4"}, "cluster3": {"cluster4", "cluster5"}},
			asked:        []string{"cluster3"},
			want: verdict{
				requeue: 4 * time.Minute,
				move: &fleetfitv1alpha1.ClusterMove{From: "cluster3", Time: metav1.NewTime(now), Failures: 1,
					Reason:       "3 pod(s) unschedulable for 8m: " + gpuMessage,
					BackoffUntil: metav1.NewTime(now.Add(10 * time.Minute))},
				to: []string{"cluster4", "cluster5"},
				condition: rescheduledCondition(metav1.ConditionTrue, ReasonMoving,
					"cluster3: 3 pod(s) of the workload unschedulable for 8m: "+gpuMessage+"; moving to another cluster (cluster4, cluster5 can take it)"),
			},
		},
		"several clusters: one backed off, the next moves": {
			intent:       intent(move("cluster3", 10*time.Minute, 1, 5*time.Minute, true)),
			reports:      []stuck{report("cluster1", 1, 6*time.Minute), report("cluster3", 3, 20*time.Minute)},
			replacements: map[string][]string{"cluster1": {"cluster4"}},
			asked:        []string{"cluster1"},
			want: verdict{
				move: &fleetfitv1alpha1.ClusterMove{From: "cluster1", Time: metav1.NewTime(now), Failures: 1,
					Reason:       "1 pod(s) unschedulable for 6m: " + gpuMessage,
					BackoffUntil: metav1.NewTime(now.Add(10 * time.Minute))},
				to: []string{"cluster4"},
				condition: rescheduledCondition(metav1.ConditionTrue, ReasonMoving,
					"cluster1: 1 pod(s) of the workload unschedulable for 6m: "+gpuMessage+"; moving to another cluster (cluster4 can take it)"),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var asked []string
			got := judge(tc.intent, tc.reports, now, func(from string, m fleetfitv1alpha1.ClusterMove) ([]string, string) {
				asked = append(asked, from)
				if m.From != from {
					t.Errorf("dry run of a move from %s asked to leave %s", m.From, from)
				}
				return tc.replacements[from], ""
			})
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("verdict (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.asked, asked); diff != "" {
				t.Errorf("dry runs (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestReported checks that an intent finds its pods in the reports of its decided clusters
// only, by the label value delivery puts on them, cut for a long name.
func TestReported(t *testing.T) {
	long := strings.Repeat("a-very-long-intent-name.", 5) + "x"
	labelOf := func(name string) string {
		return action.WorkMeta(utiltesting.MakeHPAIntent(name, "ns").Obj(), "c").Labels[fleetfitv1alpha1.LabelIntentName]
	}
	if labelOf(long) == long {
		t.Fatalf("the test needs a name longer than a label value, got %d characters", len(long))
	}
	entry := func(ns, label string, pods int32) fleetfitv1alpha1.UnschedulableWorkload {
		return fleetfitv1alpha1.UnschedulableWorkload{IntentNamespace: ns, IntentName: label, PodCount: pods, Since: metav1.NewTime(now)}
	}
	inventories := map[string]*fleetfitv1alpha1.ClusterInventory{
		"cluster1": {Status: fleetfitv1alpha1.ClusterInventoryStatus{Unschedulable: []fleetfitv1alpha1.UnschedulableWorkload{
			entry("ns", labelOf(long), 2), entry("ns", "train", 1),
		}}},
		"cluster2": {Status: fleetfitv1alpha1.ClusterInventoryStatus{Unschedulable: []fleetfitv1alpha1.UnschedulableWorkload{
			entry("other", labelOf(long), 4), entry("ns", "train", 5),
		}}},
		// Not decided: its report does not count.
		"cluster3": {Status: fleetfitv1alpha1.ClusterInventoryStatus{Unschedulable: []fleetfitv1alpha1.UnschedulableWorkload{
			entry("ns", labelOf(long), 6),
		}}},
	}
	decided := []string{"cluster1", "cluster2", "cluster4"}
	inventory := func(cluster string) *fleetfitv1alpha1.ClusterInventory { return inventories[cluster] }

	cases := map[string]struct {
		name string
		want []stuck
	}{
		"long name matches its cut label value": {name: long, want: []stuck{{cluster: "cluster1", UnschedulableWorkload: entry("ns", labelOf(long), 2)}}},
		"short name": {name: "train", want: []stuck{
			{cluster: "cluster1", UnschedulableWorkload: entry("ns", "train", 1)},
			{cluster: "cluster2", UnschedulableWorkload: entry("ns", "train", 5)},
		}},
		"a name that only shares the cut's beginning": {name: long[:len(long)-1] + "y"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := reported(utiltesting.MakeHPAIntent(tc.name, "ns").Obj(), decided, inventory)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(stuck{})); diff != "" {
				t.Errorf("reported (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestWithMove(t *testing.T) {
	var moves []fleetfitv1alpha1.ClusterMove
	for i := range fleetfitv1alpha1.MaxMoves {
		moves = append(moves, move("cluster1", time.Duration(100-i)*time.Hour, int32(i+1), 0, i != 0))
	}
	got := withMove(moves, move("cluster2", 0, 1, time.Hour, false))
	if len(got) != fleetfitv1alpha1.MaxMoves {
		t.Fatalf("%d moves kept, want %d", len(got), fleetfitv1alpha1.MaxMoves)
	}
	// The oldest is in progress and stays; the oldest completed one goes.
	if got[0].Failures != 1 || got[1].Failures != 3 || got[len(got)-1].From != "cluster2" {
		t.Errorf("kept failures %d, %d, ... last from %s; want 1, 3, ... cluster2", got[0].Failures, got[1].Failures, got[len(got)-1].From)
	}
}

// growing marks a report as coming from a cluster with a ready autoscaling pool.
func growing(s stuck) stuck {
	s.grows = true
	return s
}
