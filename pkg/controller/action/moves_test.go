package action

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	clusterfake "open-cluster-management.io/api/client/cluster/clientset/versioned/fake"
	clusterinformers "open-cluster-management.io/api/client/cluster/informers/externalversions"
	workfake "open-cluster-management.io/api/client/work/clientset/versioned/fake"
	workinformers "open-cluster-management.io/api/client/work/informers/externalversions"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitfake "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/fake"
	fleetfitinformers "github.com/fleetfit/fleetfit/pkg/generated/informers/externalversions"
	"github.com/fleetfit/fleetfit/pkg/scheduler/cache"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
)

// workloadWork is a ManifestWork holding a Deployment "web" in namespace "shop", with the
// conditions and the Deployment's status feedback the work agent reports.
func workloadWork(conditions []metav1.Condition, values ...workv1.FeedbackValue) *workv1.ManifestWork {
	raw, err := json.Marshal(deployment("web", "shop"))
	if err != nil {
		panic(err)
	}
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "shop.web"}}
	w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	w.Status.Conditions = conditions
	if len(values) > 0 {
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		}}
	}
	return w
}

// kindWork is a ManifestWork of one workload of kind, with no status feedback.
func kindWork(kind string, conditions []metav1.Condition) *workv1.ManifestWork {
	o := deployment("web", "shop")
	o.Kind = kind
	raw, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "shop.web"}}
	w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	w.Status.Conditions = conditions
	return w
}

// withEmptyFeedback adds the Deployment's resource status without any feedback value, as the
// work agent reports a resource it has applied but not yet read back.
func withEmptyFeedback(w *workv1.ManifestWork) *workv1.ManifestWork {
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
		ResourceMeta: workv1.ManifestResourceMeta{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web"},
	}}
	return w
}

func integer(name string, v int64) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(v)}}
}

func str(name, v string) workv1.FeedbackValue {
	return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.String, String: ptr.To(v)}}
}

var (
	applied   = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue}}
	available = []metav1.Condition{{Type: workv1.WorkApplied, Status: metav1.ConditionTrue}, {Type: workv1.WorkAvailable, Status: metav1.ConditionTrue}}
)

// TestDepart is the keep-or-delete table of a cluster the intent is no longer decided on.
func TestDepart(t *testing.T) {
	running := workloadWork(available, integer("Replicas", 2), integer("ReadyReplicas", 2), integer("AvailableReplicas", 2))
	pending := workloadWork(available, integer("Replicas", 2))
	deleting := running.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	cases := map[string]struct {
		moving    bool
		work      *workv1.ManifestWork
		decided   []string
		available []string
		want      departure
	}{
		"deselected without a move: deleted as always": {
			work: running, decided: []string{"cluster2"},
			want: departure{cluster: "cluster1"},
		},
		"moving, the replacement not available yet: kept": {
			moving: true, work: running, decided: []string{"cluster2"},
			want: departure{cluster: "cluster1", keep: true, why: "moving away: kept until the workload is available on cluster2"},
		},
		"moving, two clusters could take it": {
			moving: true, work: running, decided: []string{"cluster2", "cluster3"},
			want: departure{cluster: "cluster1", keep: true, why: "moving away: kept until the workload is available on cluster2 or cluster3"},
		},
		"moving, the replacement is available: deleted, the move completes": {
			moving: true, work: running, decided: []string{"cluster2", "cluster3"}, available: []string{"cluster3"},
			want: departure{cluster: "cluster1", complete: true, why: "the workload is available on cluster3"},
		},
		"moving, nothing runs on the old cluster: deleted at once": {
			moving: true, work: pending, decided: []string{"cluster2"},
			want: departure{cluster: "cluster1", complete: true, why: "nothing of the workload runs there"},
		},
		"moving, no other cluster decided: kept although it runs": {
			moving: true, work: running,
			want: departure{cluster: "cluster1", keep: true, why: "moving away: kept while the intent is decided on no other cluster"},
		},
		"moving, no other cluster decided and nothing runs: kept": {
			moving: true, work: pending,
			want: departure{cluster: "cluster1", keep: true, why: "moving away: kept while the intent is decided on no other cluster"},
		},
		"moving, the ManifestWork is gone: the move completes": {
			moving: true, decided: []string{"cluster2"},
			want: departure{cluster: "cluster1", complete: true, gone: true, why: "its ManifestWork is gone"},
		},
		"moving, the ManifestWork is being deleted: the move completes": {
			moving: true, work: deleting, decided: []string{"cluster2"},
			want: departure{cluster: "cluster1", complete: true, gone: true, why: "its ManifestWork is gone"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := depart("cluster1", tc.moving, tc.work, tc.decided, sets.New(tc.available...))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(departure{})); diff != "" {
				t.Errorf("depart (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestRunsNothing: what the status feedback must say for the old cluster to run nothing of
// the workload; without feedback it may run.
func TestRunsNothing(t *testing.T) {
	pod := func(values ...workv1.FeedbackValue) *workv1.ManifestWork {
		raw := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"shop"},"spec":{"containers":[{"name":"c"}]}}`)
		cm := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"shop"}}`)
		w := &workv1.ManifestWork{}
		w.Spec.Workload.Manifests = []workv1.Manifest{{RawExtension: runtime.RawExtension{Raw: cm}}, {RawExtension: runtime.RawExtension{Raw: raw}}}
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta:    workv1.ManifestResourceMeta{Version: "v1", Kind: "Pod", Resource: "pods", Namespace: "shop", Name: "p"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: values},
		}}
		return w
	}
	cases := map[string]struct {
		work *workv1.ManifestWork
		want bool
	}{
		"no feedback yet":                  {work: workloadWork(applied), want: false},
		"replicas asked, none ready":       {work: workloadWork(applied, integer("Replicas", 3)), want: true},
		"one replica ready":                {work: workloadWork(applied, integer("Replicas", 3), integer("ReadyReplicas", 1)), want: false},
		"one replica available":            {work: workloadWork(applied, integer("Replicas", 3), integer("AvailableReplicas", 1)), want: false},
		"a pending Pod beside a ConfigMap": {work: pod(str("PodPhase", "Pending")), want: true},
		"a running Pod":                    {work: pod(str("PodPhase", "Running"), str("PodReady", "False")), want: false},
		"a Pod without feedback":           {work: pod(), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := runsNothing(tc.work); got != tc.want {
				t.Errorf("runsNothing = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReplacementAvailable: OCM's Available says the objects exist; the replacement counts
// only once its pods are ready as asked, where the feedback tells.
func TestReplacementAvailable(t *testing.T) {
	cases := map[string]struct {
		work *workv1.ManifestWork
		want bool
	}{
		"applied only":                      {work: workloadWork(applied, integer("Replicas", 2), integer("ReadyReplicas", 2)), want: false},
		"available, pods not ready":         {work: workloadWork(available, integer("Replicas", 2), integer("ReadyReplicas", 1)), want: false},
		"available, ready as asked":         {work: workloadWork(available, integer("Replicas", 2), integer("ReadyReplicas", 2)), want: true},
		"available, no feedback yet":        {work: workloadWork(available), want: false},
		"available, a kind without rules":   {work: kindWork("CronJob", available), want: true},
		"a StatefulSet not reported yet":    {work: kindWork("StatefulSet", available), want: false},
		"a Deployment reported empty":       {work: withEmptyFeedback(workloadWork(available)), want: false},
		"a DaemonSet not on every node yet": {work: workloadWork(available, integer("DesiredNumberScheduled", 3), integer("NumberReady", 2)), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := replacementAvailable(tc.work); got != tc.want {
				t.Errorf("replacementAvailable = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestMakeBeforeBreak runs the controller's sync over a move: the informer has not seen the
// move yet when it sees the new decision, the old cluster keeps its ManifestWork while the
// replacement is not available, and loses it, with the move completed, once it is. The
// Delivered condition says where pods wait and what is kept.
func TestMakeBeforeBreak(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := testingclock.NewFakeClock(now)
	in := ut.MakeHPAIntent("web", "shop").Placement("web").Consumer(
		ut.MakeConsumer("web").Target("Deployment", "web", "app").Requirement(ut.MakeResource("cpu", "cpu").Requests("1").Obj()).Obj(),
	).Manifest(deployment("web", "")).Obj()
	in.UID, in.Generation, in.ResourceVersion = "uid-web", 1, "1"
	in.Finalizers = []string{Finalizer}
	in.Status.ScheduledPlacement = "web"
	meta.SetStatusCondition(&in.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionValid, Status: metav1.ConditionTrue, Reason: "Valid", ObservedGeneration: 1})
	// The API server has the move; the informer does not yet.
	moved := in.DeepCopy()
	moved.Status.Moves = []v1alpha1.ClusterMove{{From: "cluster1", Time: metav1.NewTime(now.Add(-time.Minute)), Failures: 1,
		BackoffUntil: metav1.NewTime(now.Add(9 * time.Minute)), Reason: "3 pods unschedulable"}}
	decision := &clusterv1beta1.PlacementDecision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-decision-1", Labels: map[string]string{clusterv1beta1.PlacementLabel: "web"}},
		Status:     clusterv1beta1.PlacementDecisionStatus{Decisions: []clusterv1beta1.ClusterDecision{{ClusterName: "cluster2"}}},
	}
	old := workloadWork(available, integer("Replicas", 2), integer("ReadyReplicas", 2))
	old.ObjectMeta = WorkMeta(in, "cluster1")
	inv := ut.MakeInventory("cluster2", now, nil)
	inv.Status.Unschedulable = []v1alpha1.UnschedulableWorkload{{IntentNamespace: "shop", IntentName: "web", PodCount: 3,
		Since: metav1.NewTime(now.Add(-6 * time.Minute)), Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}

	fleetfitClient := fleetfitfake.NewSimpleClientset(moved)
	workClient := workfake.NewSimpleClientset(old)
	ocm := clusterinformers.NewSharedInformerFactory(clusterfake.NewSimpleClientset(), 0)
	work := workinformers.NewSharedInformerFactory(workClient, 0)
	fleetfit := fleetfitinformers.NewSharedInformerFactory(fleetfitClient, 0)
	c, err := New(Clients{Work: workClient, Fleetfit: fleetfitClient, Recorder: events.NewFakeRecorder(10)}, ocm, work, fleetfit, cache.New(), Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	intents := fleetfit.Fleetfit().V1alpha1().HPAIntents().Informer().GetIndexer()
	works := work.Work().V1().ManifestWorks().Informer().GetIndexer()
	for _, err := range []error{
		intents.Add(in),
		ocm.Cluster().V1beta1().PlacementDecisions().Informer().GetIndexer().Add(decision),
		works.Add(old),
		fleetfit.Fleetfit().V1alpha1().ClusterInventories().Informer().GetIndexer().Add(inv),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	intentNow := func() *v1alpha1.HPAIntent {
		got, err := fleetfitClient.FleetfitV1alpha1().HPAIntents("shop").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// The replacement is created; the old cluster keeps its ManifestWork.
	if err := c.sync(t.Context(), "shop/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if _, err := workClient.WorkV1().ManifestWorks("cluster1").Get(t.Context(), WorkName(in), metav1.GetOptions{}); err != nil {
		t.Fatalf("cluster1's ManifestWork: %v, want it kept", err)
	}
	replacement, err := workClient.WorkV1().ManifestWorks("cluster2").Get(t.Context(), WorkName(in), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("cluster2's ManifestWork: %v", err)
	}
	got := intentNow()
	wantClusters := []v1alpha1.ClusterDelivery{
		// The old ManifestWork's Deployment asks for 1 replica; the feedback is what the test says.
		{ClusterName: "cluster1", ManifestWork: WorkName(in), State: v1alpha1.DeliveryAvailable,
			Message:  "moving away: kept until the workload is available on cluster2; Deployment web: 2/2 ready",
			Replicas: ptr.To[int32](1), ReadyReplicas: ptr.To[int32](2)},
		{ClusterName: "cluster2", ManifestWork: WorkName(in), State: v1alpha1.DeliveryPending,
			Message:  "waiting for the work agent; 3 pods unschedulable for 6m: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu",
			Replicas: ptr.To[int32](1)},
	}
	if diff := cmp.Diff(wantClusters, got.Status.Clusters, cmpopts.IgnoreFields(v1alpha1.ClusterDelivery{}, "LastTransitionTime")); diff != "" {
		t.Errorf("status.clusters (-want,+got):\n%s", diff)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionDelivered)
	wantMessage := "the workload is available on 0 of 1 clusters; " +
		"cluster2: 3 pods unschedulable for 6m: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu; " +
		"cluster1: moving away: kept until the workload is available on cluster2; Deployment web: 2/2 ready"
	if cond == nil || cond.Reason != "Unschedulable" || cond.Message != wantMessage {
		t.Errorf("Delivered condition %+v, want reason Unschedulable and message %q", cond, wantMessage)
	}
	if len(got.Status.Moves) != 1 || got.Status.Moves[0].Completed != nil {
		t.Errorf("status.moves %+v, want the move kept and in progress", got.Status.Moves)
	}

	// The replacement runs: the old cluster's ManifestWork goes and the move completes.
	clock.Step(time.Minute)
	replacement.Status.Conditions = available
	replacement.Status.ResourceStatus.Manifests = workloadWork(nil, integer("Replicas", 1), integer("ReadyReplicas", 1)).Status.ResourceStatus.Manifests
	for _, err := range []error{intents.Update(got), works.Add(replacement)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := c.sync(t.Context(), "shop/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if _, err := workClient.WorkV1().ManifestWorks("cluster1").Get(t.Context(), WorkName(in), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("cluster1's ManifestWork: %v, want it deleted", err)
	}
	got = intentNow()
	if len(got.Status.Moves) != 1 || got.Status.Moves[0].Completed == nil || !got.Status.Moves[0].Completed.Time.Equal(clock.Now()) {
		t.Errorf("status.moves %+v, want the move completed at %s", got.Status.Moves, clock.Now())
	}
	if len(got.Status.Clusters) != 1 || got.Status.Clusters[0].ClusterName != "cluster2" {
		t.Errorf("status.clusters %+v, want cluster2 alone", got.Status.Clusters)
	}
}

// TestCompleteMoves: a move completes when its cluster's departure does, or when the intent is
// decided on that cluster again after the back-off; a move whose decisions have not changed
// yet waits.
func TestCompleteMoves(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	move := func(from string, backoffUntil time.Time) v1alpha1.ClusterMove {
		return v1alpha1.ClusterMove{From: from, BackoffUntil: metav1.NewTime(backoffUntil)}
	}
	done := metav1.NewTime(now.Add(-time.Hour))
	status := &v1alpha1.HPAIntentStatus{Moves: []v1alpha1.ClusterMove{
		{From: "a", BackoffUntil: metav1.NewTime(now), Completed: &done},
		move("a", now.Add(time.Minute)),  // departs now
		move("b", now.Add(time.Minute)),  // decided, in its back-off: the decisions follow soon
		move("c", now.Add(-time.Second)), // decided again after its back-off
		move("d", now.Add(time.Minute)),  // kept
	}}
	completeMoves(status, []string{"b", "c"}, []departure{{cluster: "a", complete: true}, {cluster: "d", keep: true}}, now)
	var got []bool
	for _, m := range status.Moves {
		got = append(got, m.Completed != nil)
	}
	if diff := cmp.Diff([]bool{true, true, false, true, false}, got); diff != "" {
		t.Errorf("completed moves (-want,+got):\n%s", diff)
	}
	if !status.Moves[0].Completed.Equal(&done) {
		t.Errorf("a completed move's time changed to %s", status.Moves[0].Completed)
	}
	if end, ok := nextBackoffEnd(status, []string{"b", "c"}, now); !ok || !end.Equal(now.Add(time.Minute)) {
		t.Errorf("nextBackoffEnd = %s, %v; want b's back-off end", end, ok)
	}
}

// TestUnschedulableNote: what a delivery says of the intent's pods its cluster's agent
// reports unschedulable; the agent names a long intent by its cut label value.
func TestUnschedulableNote(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	long := strings.Repeat("x", 70)
	report := func(namespace, name string, pods int32) *v1alpha1.ClusterInventory {
		inv := ut.MakeInventory("cluster2", now, nil)
		inv.Status.Unschedulable = []v1alpha1.UnschedulableWorkload{{IntentNamespace: namespace, IntentName: name, PodCount: pods,
			Since: metav1.NewTime(now.Add(-90 * time.Second)), Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}
		return inv
	}
	cases := map[string]struct {
		inv    *v1alpha1.ClusterInventory
		intent string
		want   string
	}{
		"no report":             {intent: "web", want: ""},
		"another intent's pods": {inv: report("shop", "db", 2), intent: "web", want: ""},
		"another namespace":     {inv: report("tools", "web", 2), intent: "web", want: ""},
		"one pod":               {inv: report("shop", "web", 1), intent: "web", want: "1 pod unschedulable for 1m: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu"},
		"a long name, cut": {inv: report("shop", v1alpha1.IntentLabelValue(long), 3), intent: long,
			want: "3 pods unschedulable for 1m: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := unschedulableNote(tc.inv, ut.MakeHPAIntent(tc.intent, "shop").Obj(), now)
			if got != tc.want {
				t.Errorf("unschedulableNote = %q, want %q", got, tc.want)
			}
		})
	}
}
