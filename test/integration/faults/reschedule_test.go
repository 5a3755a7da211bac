package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// TestHubKilledDuringMove kills fleetfit-hub with SIGKILL in the middle of a move — after it
// wrote the move away from cluster A and delivered to the replacement B, while A keeps its
// ManifestWork because the workload runs there and is not available on B yet — and starts it
// again with the same command line. Nothing is lost (A keeps the same ManifestWork until B is
// available), duplicated (one ManifestWork per cluster, each made once) or moved twice (one
// entry in status.moves, however long the pods on A keep waiting).
//
// No kube-scheduler or work agent runs in this fleet: the test plays them. On A it creates the
// intent's two pods as they would be there, one running and one that kube-scheduler found no
// node for, which A's fleetfit-agent reports; it writes the ManifestWorks' status as OCM's work
// agent would (A: 1 of 2 replicas ready; B: nothing until the test makes it 2 of 2).
func TestHubKilledDuringMove(t *testing.T) {
	// afterRestart is how long the restarted hub is watched before B becomes available: its
	// informers sync, every controller looks at the intent again, and the placement runs a
	// cycle (the clusters are relabelled halfway).
	const afterRestart = 20 * time.Second
	e := newEnv(t, "kill-move")
	e.startAgents()
	works := e.recordWorks()
	hub := e.startHub()
	from, to, before := e.startMove(rsIntent)

	if err := hub.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed fleetfit-hub while moving from %s to %s", from, to)
	if err := framework.RestartHubProcess(t.Context(), hub); err != nil {
		t.Fatal(err)
	}
	// The pods on A still wait, longer than the threshold: the restarted hub must take the move
	// up where it was, neither completing it nor moving again.
	unchanged := e.moveInProgress(rsIntent, from, to, before)
	framework.Consistently(t, afterRestart/2, unchanged)
	e.relabelClusters("after-move-restart")
	framework.Consistently(t, afterRestart/2, unchanged)

	// B is available: only now does A's ManifestWork go, and the move completes.
	e.setWorkStatus(to, rsIntent, 2)
	e.waitMoveCompleted(rsIntent, to, before)
	if err := works.checkMove(from, to); err != nil {
		t.Error(err)
	}
}

// TestRunningReplicasKeptUntilReplacementReady: a workload with one of its two replicas
// running on A is moved away for the other, which waits unschedulable. A keeps its
// ManifestWork while B's work agent says nothing of the workload yet, then while it says the
// Deployment exists (Available, as OCM's work agent reports once it applied it, before any
// status feedback), then while the feedback shows 0 of 2 replicas ready; only once B has 2 of 2
// ready does A's ManifestWork go.
func TestRunningReplicasKeptUntilReplacementReady(t *testing.T) {
	// hold is how long each state of B is watched for A's ManifestWork to stay.
	const hold = 10 * time.Second
	e := newEnv(t, "keep-running")
	e.startAgents()
	works := e.recordWorks()
	e.startHub()
	from, to, before := e.startMove(rsIntent)

	kept := e.moveInProgress(rsIntent, from, to, before)
	framework.Consistently(t, hold, kept)
	for _, ready := range []int64{noFeedback, 0} {
		e.setWorkStatus(to, rsIntent, ready)
		framework.Consistently(t, hold, kept)
	}
	e.setWorkStatus(to, rsIntent, 2)
	e.waitMoveCompleted(rsIntent, to, before)
	if err := works.checkMove(from, to); err != nil {
		t.Error(err)
	}
}

// rsIntent is the intent the rescheduling tests move.
const rsIntent = "mover"

// startMove creates an intent with two replicas of 1 cpu and the shortest threshold, waits
// until it is delivered to one cluster (A), and plays what follows there: one replica runs,
// the other waits unschedulable, and the work agent reports 1 of 2 ready. It waits until the
// hub has written one move away from A, decided another cluster (B) and delivered there too,
// and returns A, B and the UIDs of the two ManifestWorks.
func (e *env) startMove(name string) (from, to string, before map[string]types.UID) {
	e.t.Helper()
	// threshold is the intent's unschedulableFor, the least the API allows.
	const threshold = 30 * time.Second
	ctx := e.t.Context()
	in := ut.MakeHPAIntent(name, e.ns).Placement(name).Consumer(
		ut.MakeConsumer("app").Target("Deployment", name, "main").Replicas(2).Requirement(
			ut.MakeResource("cpu", "cpu").Requests("1").Obj(),
		).Obj(),
	).Manifest(deployment(name)).Obj()
	in.Spec.Rescheduling = &v1alpha1.Rescheduling{UnschedulableFor: &metav1.Duration{Duration: threshold}}
	if _, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Create(ctx, in, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	if err := e.createWorkload(ctx, name, "1"); err != nil { // the Placement; the intent exists
		e.t.Fatal(err)
	}
	framework.Eventually(e.t, func(ctx context.Context) error { return e.checkConverged(ctx, []string{name}) })
	ps, err := e.placements(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	from = ps[name].Clusters[0]
	e.podsOnA(fleet.Spokes[slices.IndexFunc(fleet.Spokes, func(cp *framework.ControlPlane) bool { return cp.Name == from })], name)
	e.setWorkStatus(from, name, 1)

	// After the threshold the hub writes the move, decides another cluster and delivers there;
	// A keeps its ManifestWork, since the workload runs there and B has nothing ready.
	e.eventuallyWithin(threshold+convergeTimeout, "one move away from "+from+", the workload delivered to its replacement too", func(ctx context.Context) error {
		got, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Moves) != 1 || got.Status.Moves[0].From != from {
			return fmt.Errorf("status.moves %+v, want one move from %s", got.Status.Moves, from)
		}
		ps, err := e.placements(ctx)
		if err != nil {
			return err
		}
		if cs := ps[name].Clusters; len(cs) != 1 || cs[0] == from {
			return fmt.Errorf("placement decides %v, want one cluster other than %s", cs, from)
		}
		to = ps[name].Clusters[0]
		before, err = e.workUIDs(ctx, name)
		if err == nil && !slices.Equal(slices.Sorted(maps.Keys(before)), pair(from, to)) {
			err = fmt.Errorf("ManifestWorks on %v, want on %s and %s", slices.Sorted(maps.Keys(before)), from, to)
		}
		return err
	})
	return from, to, before
}

// waitMoveCompleted waits until the intent's only ManifestWork is the one on to it had before,
// and its one move is completed.
func (e *env) waitMoveCompleted(intent, to string, before map[string]types.UID) {
	e.t.Helper()
	e.eventuallyWithin(convergeTimeout, "the old cluster's ManifestWork removed and the move completed", func(ctx context.Context) error {
		uids, err := e.workUIDs(ctx, intent)
		if err != nil {
			return err
		}
		if got := slices.Sorted(maps.Keys(uids)); !slices.Equal(got, []string{to}) || uids[to] != before[to] {
			return fmt.Errorf("ManifestWorks on %v (%v), want only the one on %s (%s)", got, uids, to, before[to])
		}
		got, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, intent, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Moves) != 1 || got.Status.Moves[0].Completed == nil {
			return fmt.Errorf("status.moves %+v, want the one move completed", got.Status.Moves)
		}
		return nil
	})
}

// podsOnA creates, in the test's namespace on the spoke, the intent's two pods as the spoke
// would have them: one running on a node, one that kube-scheduler found no node for. Both
// carry the labels delivery puts on the intent's pods. They are deleted when the test ends.
func (e *env) podsOnA(spoke *framework.ControlPlane, intent string) {
	e.t.Helper()
	ctx := e.t.Context()
	kube := spoke.AdminClient()
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	pods := kube.CoreV1().Pods(e.ns)
	e.t.Cleanup(func() {
		_ = pods.DeleteCollection(context.Background(), *metav1.NewDeleteOptions(0), metav1.ListOptions{})
		_ = kube.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})
	now := metav1.Now()
	for _, p := range []struct {
		name, node string
		status     corev1.PodStatus
	}{
		{intent + "-running", nodes[1].name, corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}}},
		{intent + "-waiting", "", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/2 nodes are available: 2 Insufficient cpu.", LastTransitionTime: now,
		}}}},
	} {
		pod := ut.MakePod(e.ns, p.name, p.node, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})
		pod.Labels = map[string]string{
			"app": intent, v1alpha1.LabelIntentNamespace: e.ns, v1alpha1.LabelIntentName: v1alpha1.IntentLabelValue(intent),
		}
		created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			e.t.Fatal(err)
		}
		created.Status = p.status
		if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// noFeedback, as the ready replicas of setWorkStatus, writes no status feedback.
const noFeedback = -1

// setWorkStatus writes the status of the intent's ManifestWork on the cluster as OCM's work
// agent would once it applied it: Applied and Available, and the Deployment's feedback with
// ready of its 2 replicas ready (none for noFeedback: the agent applied it but has not
// reported its status yet).
func (e *env) setWorkStatus(cluster, intent string, ready int64) {
	e.t.Helper()
	e.eventuallyWithin(framework.EventuallyTimeout, "the status of the ManifestWork on "+cluster+" written", func(ctx context.Context) error {
		list, err := e.works.WorkV1().ManifestWorks(cluster).List(ctx, metav1.ListOptions{LabelSelector: e.worksOfTest().LabelSelector})
		if err != nil {
			return err
		}
		if len(list.Items) != 1 {
			return fmt.Errorf("%s has %d ManifestWorks of the test, want 1", cluster, len(list.Items))
		}
		w := &list.Items[0]
		var manifests []workv1.ManifestCondition
		for i, m := range w.Spec.Workload.Manifests {
			var meta struct {
				Kind     string `json:"kind"`
				Metadata struct{ Name, Namespace string }
			}
			if err := json.Unmarshal(m.Raw, &meta); err != nil {
				return fmt.Errorf("manifest %d of %s/%s: %w", i, w.Namespace, w.Name, err)
			}
			if meta.Kind != "Deployment" || meta.Metadata.Name != intent {
				continue
			}
			integer := func(name string, v int64) workv1.FeedbackValue {
				return workv1.FeedbackValue{Name: name, Value: workv1.FieldValue{Type: workv1.Integer, Integer: ptr.To(v)}}
			}
			c := workv1.ManifestCondition{
				ResourceMeta: workv1.ManifestResourceMeta{Ordinal: int32(i), Group: "apps", Version: "v1", Kind: "Deployment",
					Resource: "deployments", Name: intent, Namespace: meta.Metadata.Namespace},
				Conditions: workConditions(w.Generation),
			}
			if ready != noFeedback {
				c.StatusFeedbacks.Values = []workv1.FeedbackValue{
					integer("Replicas", 2), integer("ReadyReplicas", ready), integer("AvailableReplicas", ready),
				}
			}
			manifests = append(manifests, c)
		}
		if len(manifests) == 0 {
			return fmt.Errorf("%s/%s delivers no Deployment %s", w.Namespace, w.Name, intent)
		}
		w.Status = workv1.ManifestWorkStatus{Conditions: workConditions(w.Generation), ResourceStatus: workv1.ManifestResourceStatus{Manifests: manifests}}
		_, err = e.works.WorkV1().ManifestWorks(cluster).UpdateStatus(ctx, w, metav1.UpdateOptions{})
		return err
	})
}

func workConditions(generation int64) []metav1.Condition {
	now := metav1.Now()
	return []metav1.Condition{
		{Type: workv1.WorkApplied, Status: metav1.ConditionTrue, Reason: "AppliedManifestWorkComplete", Message: "Apply manifest work complete", LastTransitionTime: now, ObservedGeneration: generation},
		{Type: workv1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "ResourcesAvailable", Message: "All resources are available", LastTransitionTime: now, ObservedGeneration: generation},
	}
}

// workUIDs returns the UIDs of the intent's ManifestWorks by cluster; a ManifestWork being
// deleted counts as gone.
func (e *env) workUIDs(ctx context.Context, intent string) (map[string]types.UID, error) {
	list, err := e.works.WorkV1().ManifestWorks(metav1.NamespaceAll).List(ctx, e.worksOfTest())
	if err != nil {
		return nil, err
	}
	out := map[string]types.UID{}
	for _, w := range list.Items {
		if w.Labels[v1alpha1.LabelIntentName] != v1alpha1.IntentLabelValue(intent) || w.DeletionTimestamp != nil {
			continue
		}
		if _, twice := out[w.Namespace]; twice {
			return nil, fmt.Errorf("%s has two ManifestWorks of %s", w.Namespace, intent)
		}
		out[w.Namespace] = w.UID
	}
	return out, nil
}

// moveInProgress returns a check that the move from → to is where it was: one move, not
// completed; the placement on to; the same ManifestWorks on from and to as before, and none
// elsewhere.
func (e *env) moveInProgress(intent, from, to string, before map[string]types.UID) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		got, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, intent, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(got.Status.Moves) != 1 || got.Status.Moves[0].Completed != nil {
			return fmt.Errorf("status.moves %+v, want the one move from %s in progress", got.Status.Moves, from)
		}
		ps, err := e.placements(ctx)
		if err != nil {
			return err
		}
		if cs := ps[intent].Clusters; !slices.Equal(cs, []string{to}) {
			return fmt.Errorf("placement decides %v, want %s", cs, to)
		}
		uids, err := e.workUIDs(ctx, intent)
		if err != nil {
			return err
		}
		if !maps.Equal(uids, before) {
			return fmt.Errorf("ManifestWorks %v, want %v as before: %s keeps its ManifestWork until %s is available", uids, before, from, to)
		}
		return nil
	}
}

// checkMove returns nil when the watch saw every ManifestWork of the test made once, on from
// and to only, and the only deletion was the one on from.
func (r *workRecorder) checkMove(from, to string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var problems []string
	if r.ended != nil {
		problems = append(problems, fmt.Sprintf("the watch of ManifestWorks ended early, so changes may have been missed: %v", r.ended))
	}
	var where []string
	for _, key := range slices.Sorted(maps.Keys(r.created)) {
		where = append(where, strings.Split(key, "/")[0])
		if n := r.created[key].Len(); n > 1 {
			problems = append(problems, fmt.Sprintf("%s created %d times", key, n))
		}
	}
	if !slices.Equal(where, pair(from, to)) {
		problems = append(problems, fmt.Sprintf("ManifestWorks made on %v, want on %s and %s only", where, from, to))
	}
	for _, d := range r.deleted {
		if !strings.HasPrefix(d, from+"/") {
			problems = append(problems, "unexpected deletion: "+d)
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return nil
}

// pair returns a and b sorted.
func pair(a, b string) []string {
	out := []string{a, b}
	slices.Sort(out)
	return out
}
