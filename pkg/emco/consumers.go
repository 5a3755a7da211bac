package emco

import (
	"context"
	"net/http"
	"slices"

	"github.com/fleetfit/fleetfit/pkg/apis/fleetfit/v1alpha1"
)

// consumerIndex returns the index of the named consumer in in, or -1.
func consumerIndex(in *v1alpha1.HPAIntent, name string) int {
	return slices.IndexFunc(in.Spec.Consumers, func(c v1alpha1.ResourceConsumer) bool { return c.Name == name })
}

// consumerIn returns the index of the scope's consumer in in, or a 404.
func (s scope) consumerIn(in *v1alpha1.HPAIntent) (int, error) {
	i := consumerIndex(in, s.consumer)
	if i < 0 {
		return -1, notFound("hpa resource consumer %q not found in hpa intent %q", s.consumer, s.intent)
	}
	return i, nil
}

// consumerFromRequest reads a consumer's body.
func consumerFromRequest(r *http.Request) (*Consumer, v1alpha1.ResourceConsumer, error) {
	var body Consumer
	if err := decode(r, &body); err != nil {
		return nil, v1alpha1.ResourceConsumer{}, err
	}
	c, err := consumerFrom(&body)
	if err != nil {
		return nil, c, err
	}
	return &body, c, nil
}

func (h *Handler) createConsumer(ctx context.Context, s scope, r *http.Request) (int, any, error) {
	body, c, err := consumerFromRequest(r)
	if err != nil {
		return 0, nil, err
	}
	at := location{consumer: c.Name}
	in, err := h.update(ctx, s, at, func(in *v1alpha1.HPAIntent) error {
		if consumerIndex(in, c.Name) >= 0 {
			return conflict("hpa resource consumer %q already exists in hpa intent %q", c.Name, s.intent)
		}
		in.Spec.Consumers = append(in.Spec.Consumers, c)
		p := partsOf(in)
		p.consumer(c.Name).partMetadata = storedMetadata(body.Metadata)
		p.store(in)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, consumerOf(&in.Spec.Consumers[consumerIndex(in, c.Name)], partsOf(in)), nil
}

func (h *Handler) listConsumers(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	in, err := h.intent(ctx, s)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, intentOf(in).Spec.ResourceConsumers, nil
}

func (h *Handler) getConsumer(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	in, err := h.intent(ctx, s)
	if err != nil {
		return 0, nil, err
	}
	i, err := s.consumerIn(in)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, consumerOf(&in.Spec.Consumers[i], partsOf(in)), nil
}

// putConsumer adds the consumer, or changes its target and metadata. As in
// EMCO, a consumer with requirements cannot be changed: they are deleted first.
func (h *Handler) putConsumer(ctx context.Context, s scope, r *http.Request) (int, any, error) {
	body, c, err := consumerFromRequest(r)
	if err != nil {
		return 0, nil, err
	}
	if c.Name != s.consumer {
		return 0, nil, badRequest("metadata.name: Invalid value: %q: must be the consumer's name in the path, %q", c.Name, s.consumer)
	}
	code := http.StatusOK
	in, err := h.update(ctx, s, location{consumer: c.Name}, func(in *v1alpha1.HPAIntent) error {
		code = http.StatusOK
		i := consumerIndex(in, c.Name)
		switch {
		case i < 0:
			code = http.StatusCreated
			in.Spec.Consumers = append(in.Spec.Consumers, c)
		case len(in.Spec.Consumers[i].Requirements) > 0:
			return conflict("hpa resource consumer %q has requirements (%s): delete its requirements first", c.Name, requirementNames(&in.Spec.Consumers[i]))
		default:
			c.Replicas, c.ExclusiveCPU = in.Spec.Consumers[i].Replicas, in.Spec.Consumers[i].ExclusiveCPU
			in.Spec.Consumers[i] = c
		}
		p := partsOf(in)
		p.consumer(c.Name).partMetadata = storedMetadata(body.Metadata)
		p.store(in)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return code, consumerOf(&in.Spec.Consumers[consumerIndex(in, c.Name)], partsOf(in)), nil
}

// deleteConsumer removes a consumer that has no requirements, as EMCO does.
func (h *Handler) deleteConsumer(ctx context.Context, s scope, _ *http.Request) (int, any, error) {
	_, err := h.update(ctx, s, location{consumer: s.consumer}, func(in *v1alpha1.HPAIntent) error {
		i, err := s.consumerIn(in)
		if err != nil {
			return err
		}
		if len(in.Spec.Consumers[i].Requirements) > 0 {
			return conflict("hpa resource consumer %q has requirements (%s): delete its requirements first", s.consumer, requirementNames(&in.Spec.Consumers[i]))
		}
		p := partsOf(in)
		in.Spec.Consumers = slices.Delete(in.Spec.Consumers, i, i+1)
		p.store(in)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}
