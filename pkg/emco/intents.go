package emco

import (
	"context"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
	apivalidation "github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1/validation"
)

// intent reads the scope's intent from the hub API server. One being
// deleted, or one of another deployment intent group, is not found.
func (h *Handler) intent(ctx context.Context, s scope) (*v1alpha1.HPAIntent, error) {
	in, err := h.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(s.project).Get(ctx, s.intent, metav1.GetOptions{})
	if apierrors.IsNotFound(err) || (err == nil && (!in.DeletionTimestamp.IsZero() || !s.holds(in))) {
		return nil, notFound("hpa intent %q not found", s.intent)
	}
	return in, err
}

// update applies change to the scope's intent and writes it, reading it
// again and applying change anew whenever another change came first; it
// returns the intent as written. A change that fails, or that validation
// refuses, writes nothing. at is the part of the intent the request is
// about, for messages.
func (h *Handler) update(ctx context.Context, s scope, at location, change func(*v1alpha1.HPAIntent) error) (*v1alpha1.HPAIntent, error) {
	var out *v1alpha1.HPAIntent
	err := h.write(ctx, s, func() error {
		in, err := h.intent(ctx, s)
		if err != nil {
			return err
		}
		in = in.DeepCopy()
		if err := change(in); err != nil {
			return err
		}
		if errs := apivalidation.ValidateHPAIntent(in); len(errs) > 0 {
			return invalid(in, at, errs, labelField(in))
		}
		out, err = h.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(s.project).Update(ctx, in, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return notFound("hpa intent %q not found", s.intent)
		}
		return fromAPI(in, at, err, labelField(in))
	})
	return out, err
}

// isPlacementName returns what keeps name from being a Placement's.
func isPlacementName(name string) []string {
	problems := validation.IsDNS1123Subdomain(name)
	for i := range problems {
		problems[i] = "the app's Placement has this name: " + problems[i]
	}
	return problems
}

// labelField names the field a requirement's node label was posted as.
func labelField(in *v1alpha1.HPAIntent) func(location) string {
	p := partsOf(in)
	return func(l location) string {
		if c := p[l.consumer]; c != nil && c.Requirements[l.requirement] != nil && c.Requirements[l.requirement].LabelAs == "name" {
			return "name"
		}
		return "key"
	}
}

// intentFrom reads an intent's body.
func intentFrom(r *http.Request) (*Intent, error) {
	var body Intent
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if body.Spec.ResourceConsumers != nil {
		return nil, badRequest("spec.resourceConsumers: Forbidden: post each consumer to .../hpa-intents/%s/hpa-resource-consumers", body.Metadata.Name)
	}
	appField := "spec.app"
	switch {
	case body.Spec.App == "":
		body.Spec.App, appField = body.Spec.AppName, "spec.appName"
	case body.Spec.AppName != "" && body.Spec.AppName != body.Spec.App:
		return nil, badRequest("spec.appName: Invalid value: %q: appName is another spelling of app; give one of them", body.Spec.AppName)
	}
	if err := bodyName("metadata.name", body.Metadata.Name, validation.IsDNS1123Subdomain); err != nil {
		return nil, err
	}
	// The app names its Placement: a name no Placement can have would leave
	// the intent waiting for ever.
	if err := bodyName(appField, body.Spec.App, isPlacementName); err != nil {
		return nil, err
	}
	return &body, nil
}

func (h *Handler) createIntent(ctx context.Context, s scope, r *http.Request) (int, any, error) {
	body, err := intentFrom(r)
	if err != nil {
		return 0, nil, err
	}
	return h.newIntent(ctx, s, body)
}

// newIntent creates the HPAIntent of an intent, without consumers.
func (h *Handler) newIntent(ctx context.Context, s scope, body *Intent) (int, any, error) {
	in := &v1alpha1.HPAIntent{
		ObjectMeta: metav1.ObjectMeta{Name: body.Metadata.Name, Namespace: s.project, Labels: s.labels()},
		Spec:       v1alpha1.HPAIntentSpec{PlacementRef: v1alpha1.PlacementRef{Name: body.Spec.App}},
	}
	setIntentMetadata(in, body.Metadata)
	if errs := apivalidation.ValidateHPAIntent(in); len(errs) > 0 {
		return 0, nil, invalid(in, location{}, errs, labelField(in))
	}
	created, err := h.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(s.project).Create(ctx, in, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return 0, nil, h.exists(ctx, s, body.Metadata.Name)
	}
	if err != nil {
		return 0, nil, fromAPI(in, location{}, err, labelField(in))
	}
	return http.StatusCreated, intentOf(created), nil
}

// exists says why an intent of that name cannot be created: it exists, in
// this deployment intent group or in another one of the project.
func (h *Handler) exists(ctx context.Context, s scope, name string) error {
	in, err := h.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(s.project).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil && !in.DeletionTimestamp.IsZero():
		return conflict("hpa intent %q is being deleted: try again once it is gone", name)
	case err == nil && !s.holds(in):
		return conflict("hpa intent %q already exists in project %q, under another composite app, version or deployment intent group: intent names are unique in a project", name, s.project)
	}
	return conflict("hpa intent %q already exists", name)
}

func (h *Handler) listIntents(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	list, err := h.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(s.project).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(s.labels()).String(),
	})
	if err != nil {
		return 0, nil, err
	}
	out := []Intent{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			out = append(out, intentOf(&list.Items[i]))
		}
	}
	slices.SortFunc(out, func(a, b Intent) int { return strings.Compare(a.Metadata.Name, b.Metadata.Name) })
	return http.StatusOK, out, nil
}

func (h *Handler) getIntent(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	in, err := h.intent(ctx, s)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, intentOf(in), nil
}

// putIntent creates the intent, or changes its app and metadata. As in EMCO,
// an intent with consumers cannot be changed: they are deleted first.
func (h *Handler) putIntent(ctx context.Context, s scope, r *http.Request) (int, any, error) {
	body, err := intentFrom(r)
	if err != nil {
		return 0, nil, err
	}
	if body.Metadata.Name != s.intent {
		return 0, nil, badRequest("metadata.name: Invalid value: %q: must be the intent's name in the path, %q", body.Metadata.Name, s.intent)
	}
	if _, err := h.intent(ctx, s); err != nil {
		if !isNotFound(err) {
			return 0, nil, err
		}
		// A PUT that creates the intent needs the right to create it.
		if err := h.door.Check(ctx, access("create", s)); err != nil {
			return 0, nil, err
		}
		return h.newIntent(ctx, s, body)
	}
	updated, err := h.update(ctx, s, location{}, func(in *v1alpha1.HPAIntent) error {
		if len(in.Spec.Consumers) > 0 {
			return conflict("hpa intent %q has consumers (%s): delete its consumers first", s.intent, consumerNames(in))
		}
		in.Spec.PlacementRef.Name = body.Spec.App
		setIntentMetadata(in, body.Metadata)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, intentOf(updated), nil
}

// deleteIntent deletes an intent that has no consumers, as EMCO does. The
// deletion is conditional on the intent read, so a consumer added meanwhile
// is never deleted with it.
func (h *Handler) deleteIntent(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	err := h.write(ctx, s, func() error {
		in, err := h.intent(ctx, s)
		if err != nil {
			return err
		}
		if len(in.Spec.Consumers) > 0 {
			return conflict("hpa intent %q has consumers (%s): delete its consumers first", s.intent, consumerNames(in))
		}
		err = h.clients.Fleetfit.FleetfitV1alpha1().HPAIntents(s.project).Delete(ctx, s.intent, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &in.UID, ResourceVersion: &in.ResourceVersion},
		})
		if apierrors.IsNotFound(err) {
			return notFound("hpa intent %q not found", s.intent)
		}
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

func consumerNames(in *v1alpha1.HPAIntent) string {
	names := make([]string, len(in.Spec.Consumers))
	for i := range in.Spec.Consumers {
		names[i] = in.Spec.Consumers[i].Name
	}
	return strings.Join(names, ", ")
}

// intentStatus returns the intent's conditions, the clusters its Placement's
// decisions name and its consumers' candidates.
func (h *Handler) intentStatus(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	in, err := h.intent(ctx, s)
	if err != nil {
		return 0, nil, err
	}
	out := Status{Placement: in.Spec.PlacementRef.Name, Clusters: []string{}, Candidates: []Candidate{}}
	cond := func(t string) *Condition {
		c := meta.FindStatusCondition(in.Status.Conditions, t)
		if c == nil {
			return nil
		}
		return &Condition{Status: string(c.Status), Reason: c.Reason, Message: c.Message, Current: c.ObservedGeneration == in.Generation}
	}
	out.Valid, out.Scheduled, out.Delivered = cond(v1alpha1.ConditionValid), cond(v1alpha1.ConditionScheduled), cond(v1alpha1.ConditionDelivered)
	decisions, err := h.clients.Cluster.ClusterV1beta1().PlacementDecisions(s.project).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{clusterv1beta1.PlacementLabel: in.Spec.PlacementRef.Name}).String(),
	})
	if err != nil {
		return 0, nil, err
	}
	for _, d := range decisions.Items {
		for _, c := range d.Status.Decisions {
			out.Clusters = append(out.Clusters, c.ClusterName)
		}
	}
	slices.Sort(out.Clusters)
	out.Clusters = slices.Compact(out.Clusters)
	for _, c := range in.Status.Candidates {
		out.Candidates = append(out.Candidates, Candidate{
			Consumer: c.Consumer, Replicas: c.Replicas, Mode: string(c.Mode), Clusters: append([]string{}, c.Clusters...), OmittedClusters: c.OmittedClusters,
		})
	}
	return http.StatusOK, out, nil
}
