package reschedule

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/test/framework"
)

const gpuMessage = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu"

// quick is the intent's policy in these tests: the shortest threshold the API allows.
func quick() *v1alpha1.Rescheduling {
	return &v1alpha1.Rescheduling{UnschedulableFor: &metav1.Duration{Duration: 30 * time.Second}}
}

// noMove checks that the intent has no move.
func noMove(in *v1alpha1.HPAIntent) error {
	if len(in.Status.Moves) > 0 {
		return fmt.Errorf("the intent moved: %+v", in.Status.Moves)
	}
	return nil
}

// TestMovesAwayFromUnschedulableCluster: three clusters with a GPU each; once the placement
// decides one and its agent reports the intent's pods unschedulable there for longer than
// the intent's threshold, the hub writes a move, the placement decides another cluster, and
// the intent says so in its condition and a Warning event.
func TestMovesAwayFromUnschedulableCluster(t *testing.T) {
	e := newEnv(t, "moves")
	for _, s := range []string{"a", "b", "c"} {
		e.createCluster(s, gpuNode("gpu-"+s, "1"))
	}
	e.createWorkload("train", quick())
	e.startHub()

	from := e.waitDecidedOne("train")
	e.reportUnschedulable(from, "train", 3, time.Now().Add(-10*time.Minute), gpuMessage)

	in := e.waitIntent("train", func(in *v1alpha1.HPAIntent) error {
		if len(in.Status.Moves) != 1 {
			return fmt.Errorf("moves %+v, want one", in.Status.Moves)
		}
		return rescheduled(metav1.ConditionTrue, "Moving")(in)
	})
	m := in.Status.Moves[0]
	if m.From != from || m.Failures != 1 || !strings.HasPrefix(m.Reason, "3 pod(s) unschedulable for 10m") || !strings.Contains(m.Reason, gpuMessage) {
		t.Errorf("move %+v, want one from %s, failure 1, with the pods and the message", m, from)
	}
	// The back-off is twice the threshold after a first failure.
	if got := m.BackoffUntil.Sub(m.Time.Time); got != time.Minute {
		t.Errorf("back-off of %s, want 1m", got)
	}
	cond := meta.FindStatusCondition(in.Status.Conditions, "Rescheduled")
	if !strings.HasPrefix(cond.Message, from+": 3 pod(s) of the workload unschedulable for 10m") || !strings.Contains(cond.Message, "moving to another cluster") {
		t.Errorf("condition message %q", cond.Message)
	}

	framework.Eventually(t, func(ctx context.Context) error {
		got, err := e.decided(ctx, "train")
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0] == from {
			return fmt.Errorf("placement decides %v, want one cluster other than %s", got, from)
		}
		return nil
	})
	framework.Eventually(t, func(ctx context.Context) error {
		evs, err := e.intentEvents(ctx, "train", "Rescheduling")
		if err != nil {
			return err
		}
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeWarning || evs[0].Note != cond.Message {
			return fmt.Errorf("events %+v, want one Warning saying %q", evs, cond.Message)
		}
		return nil
	})
}

// TestPolicyNever: with spec.rescheduling.policy Never, nothing moves, and the condition says
// that the pods wait and why.
func TestPolicyNever(t *testing.T) {
	e := newEnv(t, "never")
	for _, s := range []string{"a", "b", "c"} {
		e.createCluster(s, gpuNode("gpu-"+s, "1"))
	}
	never := quick()
	never.Policy = v1alpha1.ReschedulingNever
	e.createWorkload("train", never)
	e.startHub()

	from := e.waitDecidedOne("train")
	e.reportUnschedulable(from, "train", 2, time.Now().Add(-10*time.Minute), gpuMessage)
	in := e.waitIntent("train", rescheduled(metav1.ConditionFalse, "Never"))
	msg := meta.FindStatusCondition(in.Status.Conditions, "Rescheduled").Message
	if !strings.HasPrefix(msg, from+": 2 pod(s) of the workload unschedulable for 10m: "+gpuMessage) || !strings.Contains(msg, "rescheduling is off") {
		t.Errorf("condition message %q", msg)
	}
	framework.Consistently(t, 3*time.Second, func(ctx context.Context) error {
		in, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := noMove(in); err != nil {
			return err
		}
		got, err := e.decided(ctx, "train")
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0] != from {
			return fmt.Errorf("placement decides %v, want %s still", got, from)
		}
		return nil
	})
}

// TestNoReplacement: when no other cluster can take the workload (the others have no GPU),
// nothing moves, and the condition says so.
func TestNoReplacement(t *testing.T) {
	e := newEnv(t, "noreplacement")
	only := e.createCluster("a", gpuNode("gpu-a", "1"))
	for _, s := range []string{"b", "c"} {
		e.createCluster(s, gpuNode("cpu-"+s, "0"))
	}
	e.createWorkload("train", quick())
	e.startHub()

	if from := e.waitDecidedOne("train"); from != only {
		t.Fatalf("placement decides %s, want %s, the only cluster with a GPU", from, only)
	}
	e.reportUnschedulable(only, "train", 1, time.Now().Add(-10*time.Minute), gpuMessage)
	in := e.waitIntent("train", rescheduled(metav1.ConditionFalse, "NoReplacement"))
	msg := meta.FindStatusCondition(in.Status.Conditions, "Rescheduled").Message
	if !strings.HasPrefix(msg, only+": 1 pod(s) of the workload unschedulable for 10m: "+gpuMessage) || !strings.Contains(msg, "no other cluster can take it") {
		t.Errorf("condition message %q", msg)
	}
	framework.Consistently(t, 3*time.Second, func(ctx context.Context) error {
		in, err := e.fleetfit.FleetfitV1alpha1().HPAIntents(e.ns).Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := noMove(in); err != nil {
			return err
		}
		got, err := e.decided(ctx, "train")
		if err != nil {
			return err
		}
		if len(got) != 1 || got[0] != only {
			return fmt.Errorf("placement decides %v, want %s still", got, only)
		}
		return nil
	})
}
