package hpaintent

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	clusterlisterv1beta1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	"github.com/fleetfit/fleetfit/pkg/delivery"
	"github.com/fleetfit/fleetfit/pkg/hpa"
	"github.com/fleetfit/fleetfit/pkg/logs"
	"github.com/fleetfit/fleetfit/pkg/textcap"
)

// Reasons of the Valid condition.
const (
	ReasonValid = "Valid"
	// ReasonIncomplete: the intent has no consumers, or a consumer has no
	// requirements. EMCO's API builds an intent in steps (the intent, then
	// its consumers, then their requirements), and each step is stored; an
	// intent in between is not an error, but it cannot shape its Placement
	// either, so it is invalid and the Placement keeps its decisions.
	ReasonIncomplete          = hpa.ReasonIncomplete
	ReasonManifestNotAllowed  = "ManifestNotAllowed"
	ReasonInvalidWorkload     = string(hpa.ReasonInvalidWorkload)
	ReasonInvalidRequirements = string(hpa.ReasonInvalidRequirements)
)

// maxMessageLength keeps a condition message within the API's limit (32 KiB): the Valid
// condition lists every problem of an intent, so it gets more room than other messages.
const maxMessageLength = 8 * textcap.MaxMessage

// check is one validity policy: ok, or a reason and a message saying what to
// fix. Checks never fail transiently: listers read the informer cache.
type check func(v validator, in *v1alpha1.HPAIntent) (reason, message string, ok bool)

// validator is what the checks read besides the intent.
type validator struct {
	placements clusterlisterv1beta1.PlacementLister
	delivery   *delivery.Policy
}

// checks run in order; every failing one contributes to the message and the
// first one gives the reason.
var checks = []check{placementExists, complete, resolves, deliverable}

// deliverable refuses manifests the hub does not deliver (see pkg/delivery).
func deliverable(v validator, in *v1alpha1.HPAIntent) (string, string, bool) {
	problems := v.delivery.Check(in)
	if len(problems) == 0 {
		return "", "", true
	}
	return ReasonManifestNotAllowed, strings.Join(problems, "; ") + "; nothing of the workload is delivered until it is fixed", false
}

func placementExists(v validator, in *v1alpha1.HPAIntent) (string, string, bool) {
	name := in.Spec.PlacementRef.Name
	if _, err := v.placements.Placements(in.Namespace).Get(name); apierrors.IsNotFound(err) {
		return hpa.ReasonPlacementNotFound, fmt.Sprintf("Placement %q not found in namespace %q: create it or fix spec.placementRef.name", name, in.Namespace), false
	}
	return "", "", true
}

// complete finds the consumers and requirements an intent built step by step
// still lacks. It comes after placementExists, whose reason the placement
// controller reads (hpa.PlacementMissing).
func complete(_ validator, in *v1alpha1.HPAIntent) (string, string, bool) {
	until := fmt.Sprintf("until then it changes nothing about the decisions of Placement %q", in.Spec.PlacementRef.Name)
	if len(in.Spec.Consumers) == 0 {
		return ReasonIncomplete, "the intent has no consumers yet: add at least one to spec.consumers; " + until, false
	}
	var empty []string
	for i := range in.Spec.Consumers {
		if len(in.Spec.Consumers[i].Requirements) == 0 {
			empty = append(empty, strconv.Quote(in.Spec.Consumers[i].Name))
		}
	}
	switch len(empty) {
	case 0:
		return "", "", true
	case 1:
		return ReasonIncomplete, fmt.Sprintf("consumer %s has no requirements yet: add at least one to its requirements; %s", empty[0], until), false
	default:
		return ReasonIncomplete, fmt.Sprintf("consumers %s have no requirements yet: add at least one to the requirements of each; %s", strings.Join(empty, ", "), until), false
	}
}

func resolves(_ validator, in *v1alpha1.HPAIntent) (string, string, bool) {
	_, err := hpa.Resolve(in)
	if err == nil {
		return "", "", true
	}
	var msgs []string
	for _, p := range hpa.Problems(err) {
		msgs = append(msgs, p.Error())
	}
	if len(msgs) == 0 {
		msgs = []string{err.Error()}
	}
	return string(hpa.ReasonOf(err)), strings.Join(msgs, "; "), false
}

// ValidCondition runs the checks and returns the Valid condition for the
// intent's current generation, stamped with now. policy is what the hub
// delivers (nil: delivery.DefaultKinds into the intent's namespace).
func ValidCondition(placements clusterlisterv1beta1.PlacementLister, policy *delivery.Policy, in *v1alpha1.HPAIntent, now metav1.Time) metav1.Condition {
	if policy == nil {
		policy = delivery.Default()
	}
	v := validator{placements: placements, delivery: policy}
	cond := metav1.Condition{
		Type:               v1alpha1.ConditionValid,
		Status:             metav1.ConditionTrue,
		Reason:             ReasonValid,
		Message:            fmt.Sprintf("Placement %q exists and all %d consumers resolve", in.Spec.PlacementRef.Name, len(in.Spec.Consumers)),
		ObservedGeneration: in.Generation,
		LastTransitionTime: now,
	}
	var msgs []string
	for _, chk := range checks {
		reason, msg, ok := chk(v, in)
		if ok {
			continue
		}
		if len(msgs) == 0 {
			cond.Status, cond.Reason = metav1.ConditionFalse, reason
		}
		msgs = append(msgs, msg)
	}
	if len(msgs) > 0 {
		cond.Message = strings.Join(msgs, "; ")
		cond.Message = textcap.Truncate(cond.Message, maxMessageLength)
	}
	return cond
}

// sync sets the Valid condition of one intent. It returns an error only for a
// failed status write, which is retried; an invalid intent is a condition and
// an event, and waits for the user's next change (or its Placement's arrival).
func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key we produce; nothing to retry
	}
	in, err := c.intents.HPAIntents(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !in.DeletionTimestamp.IsZero() {
		return nil
	}
	logger := klog.FromContext(ctx).WithValues("hpaIntent", klog.KObj(in))

	cond := ValidCondition(c.placements, c.opts.Delivery, in, metav1.NewTime(c.opts.Clock.Now()))
	previous := meta.FindStatusCondition(in.Status.Conditions, v1alpha1.ConditionValid)
	status := in.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, cond)
	if equality.Semantic.DeepEqual(&in.Status, status) {
		return nil
	}
	updated := in.DeepCopy()
	updated.Status = *status
	if _, err := c.client.FleetfitV1alpha1().HPAIntents(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating status of HPAIntent %s: %w", key, err)
	}
	logger.V(logs.Changes).Info("Updated HPAIntent validity", "valid", cond.Status, "reason", cond.Reason)

	// Events are recorded after the write, so a retried write does not repeat
	// them: one Warning per new verdict of invalidity, one Normal on recovery.
	// An incomplete intent is one being built, step by step, so each of its
	// steps is a Normal event.
	switch {
	case cond.Status == metav1.ConditionFalse && (previous == nil || previous.Status != metav1.ConditionFalse ||
		previous.Reason != cond.Reason || previous.Message != cond.Message):
		eventType := corev1.EventTypeWarning
		if cond.Reason == ReasonIncomplete {
			eventType = corev1.EventTypeNormal
		}
		c.recorder.Eventf(in, nil, eventType, cond.Reason, "Validate", "%s", cond.Message)
	case cond.Status == metav1.ConditionTrue && previous != nil && previous.Status == metav1.ConditionFalse:
		c.recorder.Eventf(in, nil, corev1.EventTypeNormal, ReasonValid, "Validate", "%s", cond.Message)
	}
	return nil
}
