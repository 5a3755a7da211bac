package emco

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

func requirementIndex(c *v1alpha1.ResourceConsumer, name string) int {
	return slices.IndexFunc(c.Requirements, func(r v1alpha1.ResourceRequirement) bool { return r.Name == name })
}

func requirementNames(c *v1alpha1.ResourceConsumer) string {
	names := make([]string, len(c.Requirements))
	for i := range c.Requirements {
		names[i] = c.Requirements[i].Name
	}
	return strings.Join(names, ", ")
}

// requirementFromRequest reads a requirement's body.
func requirementFromRequest(r *http.Request) (v1alpha1.ResourceRequirement, *requirementPart, error) {
	var body Requirement
	if err := decode(r, &body); err != nil {
		return v1alpha1.ResourceRequirement{}, nil, err
	}
	req, part, err := requirementFrom(&body)
	if err != nil {
		return req, nil, err
	}
	return req, part, nil
}

// keep stores a requirement's part in in's annotations.
func keep(in *v1alpha1.HPAIntent, consumer, name string, part *requirementPart) {
	p := partsOf(in)
	*p.requirement(consumer, name) = *part
	p.store(in)
}

// requirementResponse is the requirement as written.
func requirementResponse(in *v1alpha1.HPAIntent, consumer, name string) Requirement {
	c := &in.Spec.Consumers[consumerIndex(in, consumer)]
	return requirementOf(consumer, &c.Requirements[requirementIndex(c, name)], partsOf(in))
}

func (h *Handler) createRequirement(ctx context.Context, s scope, r *http.Request) (int, any, error) {
	req, part, err := requirementFromRequest(r)
	if err != nil {
		return 0, nil, err
	}
	at := location{consumer: s.consumer, requirement: req.Name}
	in, err := h.update(ctx, s, at, func(in *v1alpha1.HPAIntent) error {
		i, err := s.consumerIn(in)
		if err != nil {
			return err
		}
		c := &in.Spec.Consumers[i]
		if requirementIndex(c, req.Name) >= 0 {
			return conflict("resource requirement %q already exists in hpa resource consumer %q", req.Name, s.consumer)
		}
		c.Requirements = append(c.Requirements, *req.DeepCopy())
		keep(in, s.consumer, req.Name, part)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, requirementResponse(in, s.consumer, req.Name), nil
}

func (h *Handler) listRequirements(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	in, err := h.intent(ctx, s)
	if err != nil {
		return 0, nil, err
	}
	i, err := s.consumerIn(in)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, consumerOf(&in.Spec.Consumers[i], partsOf(in)).Spec.ResourceRequirements, nil
}

func (h *Handler) getRequirement(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	in, err := h.intent(ctx, s)
	if err != nil {
		return 0, nil, err
	}
	i, err := s.consumerIn(in)
	if err != nil {
		return 0, nil, err
	}
	if requirementIndex(&in.Spec.Consumers[i], s.requirement) < 0 {
		return 0, nil, notFound("resource requirement %q not found in hpa resource consumer %q", s.requirement, s.consumer)
	}
	return http.StatusOK, requirementResponse(in, s.consumer, s.requirement), nil
}

// putRequirement adds the requirement, or replaces it where it is.
func (h *Handler) putRequirement(ctx context.Context, s scope, r *http.Request) (int, any, error) {
	req, part, err := requirementFromRequest(r)
	if err != nil {
		return 0, nil, err
	}
	if req.Name != s.requirement {
		return 0, nil, badRequest("metadata.name: Invalid value: %q: must be the requirement's name in the path, %q", req.Name, s.requirement)
	}
	code := http.StatusOK
	in, err := h.update(ctx, s, location{consumer: s.consumer, requirement: req.Name}, func(in *v1alpha1.HPAIntent) error {
		i, err := s.consumerIn(in)
		if err != nil {
			return err
		}
		c := &in.Spec.Consumers[i]
		if j := requirementIndex(c, req.Name); j >= 0 {
			code = http.StatusOK
			c.Requirements[j] = *req.DeepCopy()
		} else {
			code = http.StatusCreated
			c.Requirements = append(c.Requirements, *req.DeepCopy())
		}
		keep(in, s.consumer, req.Name, part)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return code, requirementResponse(in, s.consumer, req.Name), nil
}

func (h *Handler) deleteRequirement(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	_, err := h.update(ctx, s, location{consumer: s.consumer, requirement: s.requirement}, func(in *v1alpha1.HPAIntent) error {
		i, err := s.consumerIn(in)
		if err != nil {
			return err
		}
		c := &in.Spec.Consumers[i]
		j := requirementIndex(c, s.requirement)
		if j < 0 {
			return notFound("resource requirement %q not found in hpa resource consumer %q", s.requirement, s.consumer)
		}
		p := partsOf(in)
		c.Requirements = slices.Delete(c.Requirements, j, j+1)
		p.store(in)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}
