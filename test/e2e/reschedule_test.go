package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	workclient "open-cluster-management.io/api/client/work/clientset/versioned"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	fleetfitclient "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned"
	fleetfitv1alpha1 "github.com/fleetfit/fleetfit/pkg/generated/clientset/versioned/typed/fleetfit/v1alpha1"
	schedframework "github.com/fleetfit/fleetfit/pkg/scheduler/framework"
	ut "github.com/fleetfit/fleetfit/pkg/util/testing"
	"github.com/fleetfit/fleetfit/test/framework"
)

// Names of the hub's rescheduling controller, as a user reads them on the intent.
const (
	conditionRescheduled = "Rescheduled"
	reasonMoving         = "Moving"
	reasonNever          = "Never"
)

// TestReschedulingMovesWorkloadWhosePodsStayPending follows two intents on real processes
// (kube-scheduler, kwok, OCM's work agent, fleetfit-agent on two managed clusters of the test's
// own, fleetfit-hub) from a delivery that cannot run whole to what the hub does about it.
//
// Both are decided on cluster5 (A), the only cluster of their set, and run there, two replicas
// of one GPU each. cluster6 (B) then joins the set with room for both, but a ResourceQuota in
// the workloads' namespace admits no pod there yet. A local workload on A takes one GPU of
// each workload's node: it is bound to the node by name before one replica of each workload is
// deleted, so the replacement replica finds the GPU taken (kube-scheduler: Insufficient
// nvidia.com/gpu) and stays Pending, reliably, while the other replica keeps running. One
// replica keeps running on purpose: a workload of which nothing runs on A leaves A at once
// (there is nothing to keep), so the order "A's ManifestWork removed only after B's pods are
// Ready" is a promise about a workload that still runs on A.
//
// mover (IfUnschedulable, unschedulableFor 30s): after the threshold the hub writes one move
// away from A and decides B; explain rejects A for the back-off. While B admits no pod, A keeps
// its ManifestWork and its running replica. Once B admits pods, they become Ready and only then
// (watch timestamps of both) is A's ManifestWork removed and the move completed. A is not
// decided again during its back-off, and the placement stays on B after it.
//
// stayer (Never), in the same situation: nothing moves, and its condition says why.
func TestReschedulingMovesWorkloadWhosePodsStayPending(t *testing.T) {
	ctx := t.Context()
	hub := fleet.Hub
	clusters := clusterclient.NewForConfigOrDie(hub.AdminConfig())
	intents := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().HPAIntents(rsNS)
	works := workclient.NewForConfigOrDie(hub.AdminConfig()).WorkV1()
	var logs []*framework.Component
	spokes := map[string]*framework.ControlPlane{}

	if _, err := hub.AdminClient().CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rsNS}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSets().Create(ctx, ut.MakeExclusiveClusterSet(rsSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := clusters.ClusterV1beta2().ManagedClusterSetBindings(rsNS).Create(ctx, ut.MakeClusterSetBinding(rsNS, rsSet), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	spokeA, l := rsStartSpoke(t, rsA, rsSet)
	logs = append(logs, l...)
	spokeB, l := rsStartSpoke(t, rsB, "")
	logs = append(logs, l...)
	spokes[rsA], spokes[rsB] = spokeA, spokeB
	// At --v=2 the hub logs each decision and move, which a failure's log tail shows.
	hubProcess, err := framework.StartHubProcess(ctx, hub, "--v=2")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hubProcess.Stop)
	logs = append(logs, hubProcess)
	// Cleanups run last first: the dump, while everything runs; the intents' deletion, while
	// the work agents can still remove what they applied; then the processes stop.
	t.Cleanup(func() { rsDeleteIntents(t, intents, clusters) })
	t.Cleanup(func() { rsDump(t, clusters, intents, works, spokes, logs) })

	workloads := []struct {
		name, product string
		policy        v1alpha1.ReschedulingPolicy
	}{
		{rsMover, rsMoverGPU, v1alpha1.ReschedulingIfUnschedulable},
		{rsStayer, rsStayerGPU, v1alpha1.ReschedulingNever},
	}
	for _, w := range workloads {
		if _, err := clusters.ClusterV1beta1().Placements(rsNS).Create(ctx, rsPlacement(w.name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := intents.Create(ctx, rsIntent(w.name, w.product, w.policy), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// Both are decided on A and run there whole, on the node of their GPU model.
	rsEventually(t, 2*framework.EventuallyTimeout, "both workloads decided on "+rsA+" with 2 ready pods each", func(ctx context.Context) error {
		var errs []error
		for _, w := range workloads {
			if got, err := rsDecided(ctx, clusters, w.name); err != nil || !slices.Equal(got, []string{rsA}) {
				errs = append(errs, fmt.Errorf("placement %s decides %v (%v)", w.name, got, err))
				continue
			}
			ready, _, _, err := rsPods(ctx, spokeA, w.name)
			if err != nil || len(ready) != 2 {
				errs = append(errs, fmt.Errorf("%s has %d ready pods of %s (%v)", rsA, len(ready), w.name, err))
			}
		}
		return errors.Join(errs...)
	})

	// B joins the set with room for either workload, but its namespace admits no pod yet; the
	// hub sees B as a cluster that could take the mover.
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: rsQuota, Namespace: rsNS},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	}
	created, err := spokeB.AdminClient().CoreV1().ResourceQuotas(rsNS).Create(ctx, quota, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The API server enforces a quota once its status is known; no quota controller runs here,
	// so the test writes the status that controller would.
	created.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if _, err := spokeB.AdminClient().CoreV1().ResourceQuotas(rsNS).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	joinSet := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, clusterv1beta2.ClusterSetLabel, rsSet)
	if _, err := clusters.ClusterV1().ManagedClusters().Patch(ctx, rsB, types.MergePatchType, []byte(joinSet), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Eventually(t, func(ctx context.Context) error {
		e, err := rsExplain(ctx, hubProcess, rsMover)
		if err != nil {
			return err
		}
		for _, c := range e.Clusters {
			if c.Name == rsB && c.RejectedBy == "" {
				return nil
			}
		}
		return fmt.Errorf("explain of %s shows clusters %+v, want %s feasible", rsMover, e.Clusters, rsB)
	})

	decisions := rsRecordDecisions(t, clusters)
	aRemoved, bReady := rsRecordOrder(t, works, spokeB)

	// A local workload takes one GPU of each workload's node, and one replica of each is
	// deleted: its replacement finds no GPU and waits, the other replica runs on.
	running := map[string]rsRunning{}
	for _, w := range workloads {
		ready, _, _, err := rsPods(ctx, spokeA, w.name)
		if err != nil {
			t.Fatal(err)
		}
		names := slices.Sorted(maps.Keys(ready))
		node := ready[names[0]].node
		squatter := ut.MakePod(metav1.NamespaceDefault, "local-"+w.name, node, corev1.ResourceList{gpu: resource.MustParse("1")})
		squatter.Spec.Tolerations = []corev1.Toleration{{Key: string(gpu), Operator: corev1.TolerationOpExists}}
		if _, err := spokeA.AdminClient().CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, squatter, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := spokeA.AdminClient().CoreV1().Pods(rsNS).Delete(ctx, names[0], *metav1.NewDeleteOptions(0)); err != nil {
			t.Fatal(err)
		}
		running[w.name] = ready[names[1]]
	}
	rsEventually(t, framework.EventuallyTimeout, "one replica of each workload Pending on "+rsA+" for want of a GPU, the other running", func(ctx context.Context) error {
		var errs []error
		for _, w := range workloads {
			ready, waiting, _, err := rsPods(ctx, spokeA, w.name)
			if err != nil {
				return err
			}
			if _, ok := ready[rsNameOf(ready, running[w.name])]; !ok || len(ready) != 1 || len(waiting) != 1 {
				errs = append(errs, fmt.Errorf("%s: ready %v, unschedulable %v; want the running replica %v alone ready and one unschedulable", w.name, ready, waiting, running[w.name]))
				continue
			}
			for _, msg := range waiting {
				if !strings.Contains(msg, "Insufficient "+string(gpu)) {
					errs = append(errs, fmt.Errorf("%s: kube-scheduler says %q, want Insufficient %s", w.name, msg, gpu))
				}
			}
		}
		return errors.Join(errs...)
	})

	// A's agent reports the waiting pods of both intents.
	since := map[string]time.Time{}
	inventories := fleetfitclient.NewForConfigOrDie(hub.AdminConfig()).FleetfitV1alpha1().ClusterInventories(rsA)
	rsEventually(t, framework.EventuallyTimeout, rsA+"'s inventory reporting one unschedulable pod of each intent", func(ctx context.Context) error {
		inv, err := inventories.Get(ctx, rsA, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var errs []error
		for _, w := range workloads {
			i := slices.IndexFunc(inv.Status.Unschedulable, func(u v1alpha1.UnschedulableWorkload) bool {
				return u.IntentNamespace == rsNS && u.IntentName == v1alpha1.IntentLabelValue(w.name)
			})
			if i < 0 || inv.Status.Unschedulable[i].PodCount != 1 {
				errs = append(errs, fmt.Errorf("status.unschedulable %+v, want %s/%s with 1 pod", inv.Status.Unschedulable, rsNS, w.name))
				continue
			}
			since[w.name] = inv.Status.Unschedulable[i].Since.Time
		}
		return errors.Join(errs...)
	})

	// After the threshold the hub moves the mover away from A: one move, the condition, B decided.
	var move v1alpha1.ClusterMove
	rsEventually(t, rsMoveTimeout, "one move of "+rsMover+" away from "+rsA+" and "+rsB+" decided", func(ctx context.Context) error {
		in, err := intents.Get(ctx, rsMover, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(in.Status.Moves) != 1 || in.Status.Moves[0].From != rsA || in.Status.Moves[0].Completed != nil {
			return fmt.Errorf("status.moves %+v, want one move from %s in progress", in.Status.Moves, rsA)
		}
		move = in.Status.Moves[0]
		if c := meta.FindStatusCondition(in.Status.Conditions, conditionRescheduled); c == nil || c.Status != metav1.ConditionTrue || c.Reason != reasonMoving {
			return fmt.Errorf("condition %s is %+v, want True %s", conditionRescheduled, c, reasonMoving)
		}
		if got, err := rsDecided(ctx, clusters, rsMover); err != nil || !slices.Equal(got, []string{rsB}) {
			return fmt.Errorf("placement %s decides %v (%v), want %s", rsMover, got, err, rsB)
		}
		return nil
	})
	movedSeen := time.Now()
	// Timestamps are in whole seconds.
	if waited := move.Time.Sub(since[rsMover].Truncate(time.Second)); waited < rsThreshold-time.Second {
		t.Errorf("the hub moved %s after its pods waited %v, before the threshold %v", rsMover, waited, rsThreshold)
	}
	if got, want := move.BackoffUntil.Sub(move.Time.Time), v1alpha1.Backoff(rsThreshold, 1); move.Failures != 1 || got != want {
		t.Errorf("move %+v: failures %d and back-off %v, want 1 and %v", move, move.Failures, got, want)
	}
	if !strings.Contains(move.Reason, "Insufficient "+string(gpu)) {
		t.Errorf("move reason %q does not carry kube-scheduler's message", move.Reason)
	}
	rsCheckWarning(t, hub, rsMover, rsA)

	// Explain rejects A for its back-off.
	framework.Eventually(t, func(ctx context.Context) error {
		e, err := rsExplain(ctx, hubProcess, rsMover)
		if err != nil {
			return err
		}
		for _, c := range e.Clusters {
			if c.Name == rsA && c.RejectedBy == schedframework.HardwareFitName && strings.Contains(c.Reason, "not chosen again") {
				return nil
			}
		}
		return fmt.Errorf("explain of %s shows clusters %+v, want %s rejected by %s for its back-off", rsMover, e.Clusters, rsA, schedframework.HardwareFitName)
	})

	// Make before break: B has the workload but admits no pod of it, so A keeps its
	// ManifestWork and the replica that runs there.
	framework.Eventually(t, func(ctx context.Context) error {
		_, err := rsWork(ctx, works, rsB, rsMover)
		return err
	})
	framework.Consistently(t, rsHold, func(ctx context.Context) error {
		return rsMovingNotBroken(ctx, intents, works, spokeA, spokeB, running[rsMover])
	})

	// The stayer waits as long, and may not move: the condition says so, and nothing moved.
	rsEventually(t, framework.EventuallyTimeout, rsStayer+"'s condition saying it does not move because of its policy", func(ctx context.Context) error {
		in, err := intents.Get(ctx, rsStayer, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(in.Status.Conditions, conditionRescheduled)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != reasonNever || !strings.Contains(c.Message, rsA) || !strings.Contains(c.Message, "Never") {
			return fmt.Errorf("condition %s is %+v, want False %s naming %s and the policy", conditionRescheduled, c, reasonNever, rsA)
		}
		return rsStayerUnmoved(ctx, clusters, intents, works)
	})

	// B admits pods: they become Ready, and only then is A's ManifestWork removed.
	if err := spokeB.AdminClient().CoreV1().ResourceQuotas(rsNS).Delete(ctx, rsQuota, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rsEventually(t, 2*framework.EventuallyTimeout, "2 ready pods of "+rsMover+" on "+rsB, func(ctx context.Context) error {
		// The ReplicaSet controller backs off after the quota refused its pods; a change of the
		// ReplicaSet makes it try again at once.
		if err := rsPokeReplicaSets(ctx, spokeB, rsMover); err != nil {
			return err
		}
		ready, _, _, err := rsPods(ctx, spokeB, rsMover)
		if err == nil && len(ready) != 2 {
			err = fmt.Errorf("%s has %d ready pods of %s", rsB, len(ready), rsMover)
		}
		return err
	})
	rsEventually(t, 2*framework.EventuallyTimeout, rsA+"'s ManifestWork of "+rsMover+" removed and the move completed", func(ctx context.Context) error {
		if w, err := rsWork(ctx, works, rsA, rsMover); !apierrors.IsNotFound(err) {
			return fmt.Errorf("%s still has ManifestWork %v (%v)", rsA, w, err)
		}
		in, err := intents.Get(ctx, rsMover, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(in.Status.Moves) != 1 || in.Status.Moves[0].Completed == nil {
			return fmt.Errorf("status.moves %+v, want the one move completed", in.Status.Moves)
		}
		return nil
	})
	removedAt, errRemoved := aRemoved.get()
	readyAt, errReady := bReady.get()
	switch {
	case errRemoved != nil || errReady != nil:
		t.Errorf("cannot check the order of %s's pods Ready and %s's ManifestWork removed: %v", rsB, rsA, errors.Join(errReady, errRemoved))
	case readyAt.IsZero() || removedAt.IsZero():
		t.Errorf("the watches saw %s's pods Ready at %v and %s's ManifestWork removed at %v; want both", rsB, readyAt, rsA, removedAt)
	case !removedAt.After(readyAt):
		t.Errorf("%s's ManifestWork of %s was removed at %s, before %s's pods were Ready at %s", rsA, rsMover, removedAt.Format(time.StampMilli), rsB, readyAt.Format(time.StampMilli))
	default:
		t.Logf("%s's pods Ready at %s; %s's ManifestWork removed %v later", rsB, readyAt.Format(time.StampMilli), rsA, removedAt.Sub(readyAt))
	}
	framework.Eventually(t, func(ctx context.Context) error {
		_, _, all, err := rsPods(ctx, spokeA, rsMover)
		if err == nil && all > 0 {
			err = fmt.Errorf("%s still has %d pods of %s", rsA, all, rsMover)
		}
		return err
	})

	// A has room again, but stays left out for its back-off; the placement stays on B after it.
	if err := spokeA.AdminClient().CoreV1().Pods(metav1.NamespaceDefault).Delete(ctx, "local-"+rsMover, *metav1.NewDeleteOptions(0)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	case <-time.After(time.Until(move.BackoffUntil.Time) + 5*time.Second):
	}
	if again, err := decisions.decidedAt(rsMover, rsA, movedSeen, move.BackoffUntil.Time); err != nil || len(again) > 0 {
		t.Errorf("placement %s decided %s again during its back-off (until %s): %v (%v)", rsMover, rsA, move.BackoffUntil.UTC().Format(time.TimeOnly), again, err)
	}
	if got, err := rsDecided(ctx, clusters, rsMover); err != nil || !slices.Equal(got, []string{rsB}) {
		t.Errorf("after the back-off, placement %s decides %v (%v), want it to stay on %s", rsMover, got, err, rsB)
	}
	if err := rsStayerUnmoved(ctx, clusters, intents, works); err != nil {
		t.Error(err)
	}
	if on, err := decisions.decidedAt(rsStayer, rsB, time.Time{}, time.Now()); err != nil || len(on) > 0 {
		t.Errorf("placement %s decided %s: %v (%v)", rsStayer, rsB, on, err)
	}
}

// rsMovingNotBroken checks a move in progress while B runs nothing of the mover: one move,
// not completed; A's ManifestWork kept and not being deleted; the replica on A running as it
// was (the same pod); no ready pod on B.
func rsMovingNotBroken(ctx context.Context, intents fleetfitv1alpha1.HPAIntentInterface, works workv1client.WorkV1Interface, spokeA, spokeB *framework.ControlPlane, running rsRunning) error {
	in, err := intents.Get(ctx, rsMover, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(in.Status.Moves) != 1 || in.Status.Moves[0].Completed != nil {
		return fmt.Errorf("status.moves %+v while %s runs nothing, want the one move in progress", in.Status.Moves, rsB)
	}
	w, err := rsWork(ctx, works, rsA, rsMover)
	if err != nil {
		return fmt.Errorf("%s's ManifestWork while %s runs nothing of %s: %w", rsA, rsB, rsMover, err)
	}
	if w.DeletionTimestamp != nil {
		return fmt.Errorf("%s's ManifestWork is being deleted while %s runs nothing of %s", rsA, rsB, rsMover)
	}
	ready, _, _, err := rsPods(ctx, spokeA, rsMover)
	if err != nil {
		return err
	}
	if _, ok := ready[rsNameOf(ready, running)]; !ok {
		return fmt.Errorf("the running replica %v of %s on %s is gone (ready: %v)", running, rsMover, rsA, ready)
	}
	readyB, _, _, err := rsPods(ctx, spokeB, rsMover)
	if err == nil && len(readyB) > 0 {
		err = fmt.Errorf("%s runs %v although its quota admits no pod", rsB, readyB)
	}
	return err
}

// rsStayerUnmoved checks that the stayer did not move: no move, decided on A only, no
// ManifestWork on B.
func rsStayerUnmoved(ctx context.Context, clusters clusterclient.Interface, intents fleetfitv1alpha1.HPAIntentInterface, works workv1client.WorkV1Interface) error {
	in, err := intents.Get(ctx, rsStayer, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if len(in.Status.Moves) > 0 {
		return fmt.Errorf("%s (policy Never) has status.moves %+v", rsStayer, in.Status.Moves)
	}
	if got, err := rsDecided(ctx, clusters, rsStayer); err != nil || !slices.Equal(got, []string{rsA}) {
		return fmt.Errorf("placement %s decides %v (%v), want %s only", rsStayer, got, err, rsA)
	}
	if w, err := rsWork(ctx, works, rsB, rsStayer); !apierrors.IsNotFound(err) {
		return fmt.Errorf("%s has a ManifestWork of %s (policy Never): %v (%v)", rsB, rsStayer, w, err)
	}
	return nil
}

// rsNameOf returns the name of the ready pod with the running pod's UID ("" if none).
func rsNameOf(ready map[string]rsRunning, running rsRunning) string {
	for n, r := range ready {
		if r.uid == running.uid {
			return n
		}
	}
	return ""
}
